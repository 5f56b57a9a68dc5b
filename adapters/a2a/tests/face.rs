//! The A2A face in process, on the in-memory ports: a request goes into the face's HTTP service
//! on each binding (JSON-RPC, HTTP+JSON, gRPC; no socket, no engine, no agent run), and each test
//! checks the `Submission` the face handed in and the wire answer it rendered — for the outcomes
//! of a send and every contract error kind, on every binding.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request};
use serde_json::{Value, json};
use switchyard_a2a::run::RunRequest;
use switchyard_a2a::sealing::CredentialSealer;
use switchyard_a2a::{A2aAgents, A2aConfig};
use switchyard_contract::memory::{MemoryInvocations, MemoryTasks, Reply};
use switchyard_contract::{
    Error, ErrorKind, ErrorSource, FailureCode, FailureRecord, Grant, Ingress, Principal, TaskRecord, TaskScope,
    TaskStore as _, TenantId,
};
use tower::ServiceExt as _;

fn who(tenant: &str) -> Principal {
    Principal::new(TenantId::new(tenant).unwrap_or_else(|e| panic!("{e}")), "alice")
}

/// The three bindings of one `echo` agent, answering from `port` and `tasks`.
fn face(port: Arc<MemoryInvocations>, tasks: Arc<MemoryTasks>) -> axum::Router {
    face_waiting(port, tasks, 200)
}

/// As [`face`], waiting up to `wait_ms` for a run's first answer.
fn face_waiting(port: Arc<MemoryInvocations>, tasks: Arc<MemoryTasks>, wait_ms: u64) -> axum::Router {
    let cfg: A2aConfig = serde_json::from_value(json!({
        "agents": [{"name": "echo", "kind": "echo"}],
        "call_wait_ms": wait_ms,
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let sealer = CredentialSealer::from_hex(&"11".repeat(32)).unwrap_or_else(|e| panic!("{e}"));
    let ports = switchyard_a2a::A2aPorts {
        engine: port.clone(),
        tasks: tasks.clone(),
        outbox: tasks,
        keeper: None,
        catalog: None,
        feed: None,
    };
    let agents = A2aAgents::new(cfg, ports, sealer).unwrap_or_else(|e| panic!("{e}"));
    let face = agents.face(port, None);
    switchyard_a2a::http::api(face.clone()).merge(switchyard_a2a::grpc::router(face))
}

fn message(id: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]})
}

async fn send_http(router: &axum::Router, as_: &Principal, path: &str, body: Value) -> (u16, Value) {
    let mut req = Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    req.extensions_mut().insert(as_.clone());
    let resp = router.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_else(|e| panic!("{e}"));
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A 0.3 client (`message/send`, no `A2A-Version`) is told the version is not supported, not
/// that the method is unknown; a 1.0 client naming an unknown method is told that.
#[tokio::test]
async fn a_client_of_another_version_is_told_so() {
    let port = MemoryInvocations::new(|_| Reply::Refuse(Error::internal("nothing is submitted")));
    let router = face(port.clone(), Arc::default());
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": message("v03")}});
    let mut req = Request::post("/a2a/echo")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    req.extensions_mut().insert(who("acme"));
    let resp = router.clone().oneshot(req).await.unwrap();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(7), json!(-32009)), "{v}");
    let unknown = jsonrpc(&router, &who("acme"), "message/send", json!({})).await;
    assert_eq!(unknown["error"]["code"], json!(-32601), "{unknown}");
    assert!(port.submissions().is_empty());
}

async fn jsonrpc(router: &axum::Router, as_: &Principal, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    send_http(router, as_, "/a2a/echo", body).await.1
}

/// One unary gRPC call by a caller granted everything: the status and, on success, the decoded
/// message.
async fn grpc<T: prost::Message + Default>(
    router: &axum::Router,
    as_: &Principal,
    method: &str,
    msg: &impl prost::Message,
) -> Result<T, tonic::Status> {
    grpc_granted(router, as_, Grant::All, method, msg).await
}

/// One unary gRPC call by a caller holding `grant`.
async fn grpc_granted<T: prost::Message + Default>(
    router: &axum::Router,
    as_: &Principal,
    grant: Grant,
    method: &str,
    msg: &impl prost::Message,
) -> Result<T, tonic::Status> {
    let payload = msg.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes());
    framed.extend_from_slice(&payload);
    let mut req = Request::post(format!("/lf.a2a.v1.A2AService/{method}"))
        .header("host", "127.0.0.1")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0")
        .body(Body::from(framed))
        .unwrap_or_else(|e| panic!("{e}"));
    req.extensions_mut().insert(as_.clone());
    req.extensions_mut().insert(grant);
    let resp = router.clone().oneshot(req).await.unwrap();
    let headers: HeaderMap = resp.headers().clone();
    if let Some(status) = tonic::Status::from_header_map(&headers).filter(|s| s.code() != tonic::Code::Ok) {
        return Err(status);
    }
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_else(|e| panic!("{e}"));
    T::decode(bytes.get(5..).unwrap_or_default()).map_err(|e| tonic::Status::internal(e.to_string()))
}

fn grpc_send(id: &str) -> a2a_pb::SendMessageRequest {
    let req: a2a::SendMessageRequest =
        serde_json::from_value(json!({"message": message(id)})).unwrap_or_else(|e| panic!("{e}"));
    a2a_pb::pbconv::to_proto_send_message_request(&req)
}

fn error_info(status: &tonic::Status) -> (String, std::collections::HashMap<String, String>) {
    use tonic_types::StatusExt as _;
    let info = status.get_error_details().error_info().cloned().unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    (info.reason, info.metadata)
}

#[tokio::test]
async fn a_message_is_one_submission_of_a_run_request() {
    let answer = json!({"message": {"messageId": "r1", "role": "ROLE_AGENT", "parts": [{"text": "hi back"}]}});
    let port = MemoryInvocations::new(move |_| Reply::succeed(answer.clone()));
    let router = face(port.clone(), Arc::default());
    let out = jsonrpc(&router, &who("red"), "SendMessage", json!({"message": message("m1")})).await;
    assert_eq!(out["result"]["message"]["parts"][0]["text"], "hi back", "{out}");

    let all = port.submissions();
    assert_eq!(all.len(), 1);
    let s = &all[0];
    assert_eq!(s.principal, who("red"));
    assert_eq!((s.upstream.as_str(), s.operation.as_str(), s.ingress), ("a2a-agent-echo", "SendMessage", Ingress::A2a));
    let run: RunRequest = serde_json::from_value(s.request.clone()).unwrap();
    assert_eq!((run.scope.key().as_str(), run.agent.as_str(), run.new_task), ("red/", "echo", true));
    assert_eq!(run.message.message_id, "m1");
    assert!(s.ingress_key.as_ref().is_some_and(|k| k.as_str().starts_with("a2a-")), "echo dedupes resends");

    // The same message again, on gRPC: the same message (the same key), answered by its run.
    let again: a2a_pb::SendMessageResponse = grpc(&router, &who("red"), "SendMessage", &grpc_send("m1")).await.unwrap();
    let back = a2a_pb::pbconv::from_proto_send_message_response(&again);
    let back = serde_json::to_value(back).unwrap_or_default();
    assert_eq!(back["message"]["parts"][0]["text"], "hi back", "{back}");
    let keys: Vec<_> = port.submissions().iter().map(|s| s.ingress_key.clone()).collect();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1], "the binding is not part of a message's identity");
}

/// Every contract error kind at admission, on every binding: its A2A kind (JSON-RPC code,
/// HTTP status, gRPC code), its ErrorInfo reason, and `retrySafe`.
#[tokio::test]
async fn every_error_kind_at_admission_on_every_binding() {
    use tonic::Code;
    let cases = [
        (ErrorKind::NotFound, -32001, 404, Code::NotFound, "TASK_NOT_FOUND"),
        (ErrorKind::Conflict, -32602, 400, Code::InvalidArgument, "INVALID_PARAMS"),
        (ErrorKind::InvalidInput, -32602, 400, Code::InvalidArgument, "INVALID_PARAMS"),
        (ErrorKind::Unauthenticated, -32001, 401, Code::Unauthenticated, "UNAUTHENTICATED"),
        (ErrorKind::Forbidden, -32001, 403, Code::PermissionDenied, "PERMISSION_DENIED"),
        (ErrorKind::Unavailable, -32603, 503, Code::Unavailable, "UNAVAILABLE"),
        (ErrorKind::Internal, -32603, 500, Code::Internal, "INTERNAL"),
    ];
    for (i, (kind, rpc_code, http, grpc_code, reason)) in cases.into_iter().enumerate() {
        let safe = kind == ErrorKind::Unavailable;
        let port = MemoryInvocations::new(move |_| Reply::Refuse(Error::new(kind, ErrorSource::Gateway, safe, "no")));
        let router = face(port.clone(), Arc::default());
        let red = who("red");

        let out = jsonrpc(&router, &red, "SendMessage", json!({"message": message(&format!("j{i}"))})).await;
        assert_eq!(out["error"]["code"], rpc_code, "{kind:?}: {out}");
        assert_eq!(out["error"]["data"][0]["reason"], reason, "{out}");
        assert_eq!(out["error"]["data"][0]["metadata"]["retrySafe"], safe.to_string(), "{out}");

        let (status, body) =
            send_http(&router, &red, "/a2a/echo/rest/message:send", json!({"message": message(&format!("h{i}"))}))
                .await;
        assert_eq!(status, http, "{kind:?}: {body}");
        assert_eq!(body["error"]["code"], http, "{body}");
        assert_eq!(body["error"]["details"][0]["reason"], reason, "{body}");
        assert_eq!(body["error"]["details"][0]["metadata"]["retrySafe"], safe.to_string(), "{body}");

        let refused = grpc::<a2a_pb::SendMessageResponse>(&router, &red, "SendMessage", &grpc_send(&format!("g{i}")))
            .await
            .err()
            .unwrap_or_else(|| panic!("{kind:?}: gRPC answered"));
        assert_eq!(refused.code(), grpc_code, "{kind:?}: {refused:?}");
        let (r, meta) = error_info(&refused);
        assert_eq!(r, reason);
        assert_eq!(meta.get("retrySafe").map(String::as_str), Some(if safe { "true" } else { "false" }));

        assert_eq!(port.submissions().len(), 3, "one submission per binding");
    }
}

/// A run that failed or was lost: the error names its invocation and whether a retry is safe.
#[tokio::test]
async fn failed_and_lost_runs_name_their_invocation() {
    let failed = FailureRecord::new(FailureCode::UpstreamUnavailable, "agent away", true, ErrorSource::Upstream);
    let port = MemoryInvocations::new(move |_| Reply::fail(failed.clone()));
    let router = face(port.clone(), Arc::default());
    let out = jsonrpc(&router, &who("red"), "SendMessage", json!({"message": message("f1")})).await;
    assert_eq!(out["error"]["code"], -32603, "{out}");
    assert_eq!(out["error"]["data"][0]["reason"], "UNAVAILABLE", "{out}");
    let meta = &out["error"]["data"][0]["metadata"];
    assert_eq!(meta["retrySafe"], "true");
    let inv = meta["invocation"].as_str().unwrap_or_default();
    assert!(port.invocation(inv.parse().unwrap_or_else(|e| panic!("{inv}: {e:?}"))).is_some(), "{out}");

    let port = MemoryInvocations::new(|_| Reply::unknown("the gateway stopped mid-call"));
    let router = face(port.clone(), Arc::default());
    let (status, body) =
        send_http(&router, &who("red"), "/a2a/echo/rest/message:send", json!({"message": message("u1")})).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["details"][0]["metadata"]["retrySafe"], "true", "{body}");
    assert!(body["error"]["details"][0]["metadata"]["invocation"].is_string(), "{body}");
}

/// Reads of tasks never touch the driving port and never cross tenants.
/// A non-blocking send answers with whatever its run produces first, after the send began: the
/// run's message (its invocation settles), the task it creates, or the run's failure. The wait
/// is long, so each answer comes from the change, not from the wait running out.
#[tokio::test]
async fn a_non_blocking_send_answers_with_what_its_run_produces_first() {
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let tasks = Arc::new(MemoryTasks::default());
    let router = face_waiting(port.clone(), tasks.clone(), 60_000);
    let send = |id: &'static str| {
        let router = router.clone();
        let params = json!({"message": message(id), "configuration": {"returnImmediately": true}});
        tokio::spawn(async move { jsonrpc(&router, &who("red"), "SendMessage", params).await })
    };
    let submitted = |n: usize| {
        let port = port.clone();
        async move {
            for _ in 0..500 {
                if let Some(&id) = port.admitted().get(n) {
                    let run: RunRequest = serde_json::from_value(port.submissions()[n].request.clone()).unwrap();
                    return (id, run);
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("send {n} was not submitted");
        }
    };

    let answer = send("m1");
    let (inv, _) = submitted(0).await;
    let reply = json!({"message": {"messageId": "r1", "role": "ROLE_AGENT", "parts": [{"text": "later"}]}});
    let state = switchyard_contract::InvocationState::Succeeded {
        result: reply,
        resolution: switchyard_contract::state::Resolution::Upstream,
    };
    port.settle(inv, state).unwrap();
    let out = answer.await.unwrap();
    assert_eq!(out["result"]["message"]["parts"][0]["text"], "later", "{out}");

    let answer = send("m2");
    let (_, run) = submitted(1).await;
    let body = json!({"id": run.task_id, "contextId": run.context_id, "status": {"state": "TASK_STATE_WORKING"}});
    let rec = TaskRecord {
        id: run.task_id.clone(),
        scope: run.scope.clone(),
        agent: "echo".into(),
        context_id: run.context_id.clone(),
        state: switchyard_contract::TaskStateName::Working,
        status_ms: 1,
        version: 1,
        run_cursor: None,
        body: body.clone(),
    };
    assert!(tasks.create(&rec, &[json!({"task": body})]).await.unwrap());
    let out = answer.await.unwrap();
    assert_eq!(out["result"]["task"]["id"], run.task_id.as_str(), "{out}");
    assert_eq!(out["result"]["task"]["status"]["state"], "TASK_STATE_WORKING", "{out}");

    let answer = send("m3");
    let (inv, _) = submitted(2).await;
    let failed = FailureRecord::new(FailureCode::RpcError, "the agent broke", false, ErrorSource::Upstream);
    let state = switchyard_contract::InvocationState::Failed {
        error: failed,
        resolution: switchyard_contract::state::Resolution::Upstream,
    };
    port.settle(inv, state).unwrap();
    let out = answer.await.unwrap();
    // A run that failed before it made a task answers with its failure, as a blocking send does.
    assert_eq!(out["error"]["message"], "the agent broke", "{out}");
    assert_eq!(out["error"]["code"], -32006, "{out}");
}

#[tokio::test]
async fn tasks_are_read_in_the_callers_scope_only() {
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let tasks = Arc::new(MemoryTasks::default());
    let body = json!({"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}});
    let rec = TaskRecord {
        id: "t1".into(),
        scope: TaskScope::stored("red/", "alice").unwrap(),
        agent: "echo".into(),
        context_id: "c1".into(),
        state: switchyard_contract::TaskStateName::Completed,
        status_ms: 1,
        version: 1,
        run_cursor: None,
        body: body.clone(),
    };
    assert!(tasks.create(&rec, &[json!({"task": body})]).await.unwrap());
    let router = face(port.clone(), tasks);

    let red = jsonrpc(&router, &who("red"), "GetTask", json!({"id": "t1"})).await;
    assert_eq!(red["result"]["id"], "t1", "{red}");
    assert_eq!(red["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{red}");
    let blue = jsonrpc(&router, &who("blue"), "GetTask", json!({"id": "t1"})).await;
    assert_eq!(blue["error"]["code"], -32001, "{blue}");

    let (status, _) = send_http(&router, &who("blue"), "/a2a/echo/rest/tasks/t1:cancel", json!({})).await;
    assert_eq!(status, 404);
    let get = a2a_pb::GetTaskRequest { id: "t1".into(), ..Default::default() };
    let got: a2a_pb::Task = grpc(&router, &who("red"), "GetTask", &get).await.unwrap();
    assert_eq!(got.id, "t1");
    let refused = grpc::<a2a_pb::Task>(&router, &who("blue"), "GetTask", &get).await.err();
    assert_eq!(refused.map(|s| s.code()), Some(tonic::Code::NotFound));
    assert!(port.submissions().is_empty(), "reads submit nothing");
}

/// gRPC has one service path: the request's `tenant` names the agent (its card's gRPC
/// interface lists it), an unknown one is refused, and the routed agent's scope is checked.
#[tokio::test]
async fn grpc_routes_by_tenant_and_checks_the_routed_agents_scope() {
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let router = face(port.clone(), Arc::default());
    let list = |tenant: &str| a2a_pb::ListTasksRequest { tenant: tenant.into(), ..Default::default() };
    let named = grpc::<a2a_pb::ListTasksResponse>(&router, &who("acme"), "ListTasks", &list("echo")).await;
    assert!(named.is_ok(), "{named:?}");
    let unknown = grpc::<a2a_pb::ListTasksResponse>(&router, &who("acme"), "ListTasks", &list("tck")).await;
    let status = unknown.err().unwrap_or_else(|| panic!("an unknown tenant must be refused"));
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("names no agent"), "{status:?}");
    let other = Grant::Scopes(["mcp:call".to_string()].into());
    let denied = grpc_granted::<a2a_pb::ListTasksResponse>(&router, &who("acme"), other, "ListTasks", &list("")).await;
    let status = denied.err().unwrap_or_else(|| panic!("the agent's scope must be checked"));
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    let held = Grant::Scopes(["a2a:call".to_string()].into());
    let ok = grpc_granted::<a2a_pb::ListTasksResponse>(&router, &who("acme"), held, "ListTasks", &list("echo")).await;
    assert!(ok.is_ok(), "{ok:?}");
    assert!(port.submissions().is_empty());
}

/// Paths that are not the gRPC service's answer as HTTP does (`404`), not as gRPC
/// (`200` + `grpc-status: 12`, which an HTTP client takes for an empty success); an unknown
/// method of the service is gRPC `UNIMPLEMENTED`.
#[tokio::test]
async fn only_the_grpc_service_paths_answer_as_grpc() {
    let router = face(MemoryInvocations::new(|_| Reply::Pending), Arc::default());
    for path in ["/a2a/.well-known/agent-card.json", "/nothing/here", "/lf.a2a.v1.A2AServiceX/GetTask"] {
        let req = Request::get(path).header("host", "127.0.0.1").body(Body::empty()).unwrap();
        let resp = router.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status().as_u16(), 404, "{path}: {:?}", resp.headers());
    }
    let unknown = grpc::<a2a_pb::Task>(&router, &who("acme"), "NoSuchMethod", &a2a_pb::GetTaskRequest::default()).await;
    assert_eq!(unknown.err().map(|s| s.code()), Some(tonic::Code::Unimplemented));
}
