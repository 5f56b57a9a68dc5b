//! The A2A face end to end, against the real binary: the official Python A2A SDK
//! (`a2a-sdk==1.3.0`) over JSON-RPC, HTTP+JSON and gRPC; a subscriber that resumes after the
//! gateway is killed mid-task; protocol errors and limits that change nothing; agent-card
//! caching; and, with OAuth on, authentication, scopes and tenant isolation.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::a2a::{lines, message, py, rpc, write_config};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::issuer::TestIssuer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_works_over_jsonrpc_http_json_and_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "message_dedupe = true", "anonymous = true");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let out = py(&["full", &gw.base, binding]).await;
        let checks = lines(&out);
        assert!(
            out.status.success(),
            "{binding}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(checks.iter().filter(|c| c["ok"] == true).count(), 15, "{binding}: {checks:#?}");
    }
    // Every message was an invocation of the engine, recorded before the agent ran; the resent
    // messages did not make new ones. (A send is answered once its task ended, while its outcome
    // commits.)
    let runs = gw.all_settled("default").await;
    let sends: Vec<_> = runs.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-tck").collect();
    assert_eq!(sends.len(), 3 * 6, "six distinct messages per binding (the resend deduplicated)");
    assert!(sends.iter().all(|i| i["state"]["state"] == "succeeded"), "{sends:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_resumes_after_a_restart_and_sees_every_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let store = switchyard_tests::pg::database().await;
    let opts =
        Options { data_dir: dir.path().join("d"), config: Some(config), store_url: Some(store), ..Options::default() };
    let mut gw = Gateway::start(opts.clone());
    // A task that works for 4 s; the gateway dies 0.5 s in.
    let started = lines(&py(&["start", &gw.base, "JSONRPC"]).await);
    let task = started.first().and_then(|l| l["task"].as_str()).unwrap_or_else(|| panic!("{started:?}")).to_string();
    tokio::time::sleep(Duration::from_millis(500)).await;
    gw.kill9();
    let gw = Gateway::start(opts);
    let out = py(&["resubscribe", &gw.base, "HTTP+JSON", &task]).await;
    let events = lines(&out);
    assert!(out.status.success(), "{events:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    let kinds: Vec<String> = events
        .iter()
        .filter_map(|e| e.get("event"))
        .map(|e| match (e.get("task"), e.get("statusUpdate")) {
            (Some(t), _) => format!("task:{}", t["status"]["state"].as_str().unwrap_or_default()),
            (_, Some(s)) => format!("status:{}", s["status"]["state"].as_str().unwrap_or_default()),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(kinds, ["task:TASK_STATE_WORKING", "status:TASK_STATE_COMPLETED"], "{events:#?}");
    assert_eq!(events.last().map(|e| e["final"].clone()), Some(json!("TASK_STATE_COMPLETED")));
    // The run was driven again after the restart (its lease expired) and resumed after its
    // last recorded step: one user message in the history, one WORKING, one COMPLETED.
    let (_, got) = rpc(&gw.http, &format!("{}/a2a/tck", gw.base), None, "GetTask", json!({"id": task})).await;
    assert_eq!(got["result"]["history"].as_array().map(Vec::len), Some(1), "{got}");
    let runs = gw.all_settled("default").await;
    let run = runs.iter().find(|i| i["request"]["taskId"] == task.as_str()).unwrap_or_else(|| panic!("{runs:#?}"));
    assert_eq!(run["attempts"], 2, "the lost attempt was re-driven once: {run}");
    assert_eq!(run["state"]["state"], "succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_protocol_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true\nmax_request_body_bytes = 4096");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let http = &gw.http;
    let url = format!("{}/a2a/tck", gw.base);
    let post = |body: String, ct: &'static str, version: Option<&'static str>| {
        let mut r = http.post(&url).header("content-type", ct).body(body);
        if let Some(v) = version {
            r = r.header("a2a-version", v);
        }
        r.send()
    };
    let send =
        |m: Value| json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": m}}).to_string();
    let code = |v: &Value| v["error"]["code"].as_i64();
    let cases: Vec<(&str, reqwest::Response, i64)> = vec![
        ("no A2A-Version (= 0.3)", post(send(message("x")), "application/json", None).await.unwrap(), -32009),
        ("A2A-Version 99.0", post(send(message("x")), "application/json", Some("99.0")).await.unwrap(), -32009),
        ("text/plain", post(send(message("x")), "text/plain", Some("1.0")).await.unwrap(), -32005),
        ("not JSON", post("{".into(), "application/json", Some("1.0")).await.unwrap(), -32700),
        (
            "0.3 method name",
            post(
                json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}).to_string(),
                "application/json",
                Some("1.0"),
            )
            .await
            .unwrap(),
            -32601,
        ),
        (
            "no message parts",
            post(send(json!({"messageId": "m1", "role": "ROLE_USER", "parts": []})), "application/json", Some("1.0"))
                .await
                .unwrap(),
            -32602,
        ),
    ];
    for (name, resp, want) in cases {
        assert_eq!(resp.status().as_u16(), 200, "{name}");
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_eq!(code(&body), Some(want), "{name}: {body}");
        assert!(body["error"]["data"][0]["reason"].is_string(), "{name}: ErrorInfo in data[]: {body}");
    }
    let big = post(
        send(json!({"messageId": "big", "role": "ROLE_USER", "parts": [{"text": "x".repeat(8000)}]})),
        "application/json",
        Some("1.0"),
    )
    .await
    .unwrap();
    assert_eq!(big.status().as_u16(), 413, "bodies above a2a.max_request_body_bytes");
    let big: Value = big.json().await.unwrap_or(Value::Null);
    assert_eq!(big["error"]["data"][0]["reason"], "PAYLOAD_TOO_LARGE", "a JSON-RPC error body: {big}");
    let big_rest = http
        .post(format!("{url}/rest/message:send"))
        .header("a2a-version", "1.0")
        .header("content-type", "application/json")
        .body(
            json!({"message": {"messageId": "big", "role": "ROLE_USER", "parts": [{"text": "x".repeat(8000)}]}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(big_rest.status().as_u16(), 413);
    let big_rest: Value = big_rest.json().await.unwrap_or(Value::Null);
    assert_eq!(big_rest["error"]["details"][0]["reason"], "PAYLOAD_TOO_LARGE", "an AIP-193 body: {big_rest}");
    let (_, list) = rpc(http, &url, None, "ListTasks", json!({"pageSize": 500})).await;
    assert_eq!(code(&list), Some(-32602), "{list}");
    let (_, hook) = rpc(
        http,
        &url,
        None,
        "SendMessage",
        json!({"message": message("tck-complete-task"), "configuration": {"taskPushNotificationConfig": {"url": "http://10.1.2.3/hook"}}}),
    )
    .await;
    assert_eq!(code(&hook), Some(-32602), "private webhook destinations are refused: {hook}");
    // HTTP+JSON: AIP-193 errors with the spec profile's statuses and content type.
    let rest = |path: &str| http.get(format!("{url}/rest{path}")).header("a2a-version", "1.0").send();
    let missing = rest("/tasks/no-such-task").await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    assert_eq!(missing.headers()["content-type"], "application/a2a+json");
    let body: Value = missing.json().await.unwrap_or(Value::Null);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    let page = rest("/tasks?pageSize=abc").await.unwrap();
    assert_eq!(page.status().as_u16(), 400);
    // None of that reached the engine.
    assert!(gw.all("default").await.is_empty(), "refused requests recorded nothing");

    // The card: cacheable, with a validator.
    let card = http.get(format!("{}/.well-known/agent-card.json", gw.base)).send().await.unwrap();
    assert_eq!(card.status().as_u16(), 200);
    let etag = card.headers()["etag"].clone();
    assert!(card.headers()["cache-control"].to_str().unwrap_or_default().contains("max-age="));
    assert!(card.headers().contains_key("last-modified"));
    let body: Value = card.json().await.unwrap_or(Value::Null);
    assert_eq!(body["supportedInterfaces"].as_array().map(Vec::len), Some(3), "{body}");
    let again = http
        .get(format!("{}/.well-known/agent-card.json", gw.base))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 304);
}

const RESOURCE: &str = "https://gateway.test";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_scopes_and_tenant_isolation_on_the_a2a_face() {
    let issuer = TestIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let auth = format!(
        "\n[auth]\nresource = \"{RESOURCE}\"\nscopes_supported = [\"a2a:call\", \"vault:call\"]\n\n[[auth.issuers]]\nissuer = \"{}\"\n",
        issuer.issuer
    );
    let vault = "\n[[a2a.agents]]\nname = \"vault\"\nkind = \"echo\"\nscope = \"vault:call\"\n";
    let path = write_config(dir.path(), vault, "");
    let text = std::fs::read_to_string(&path).unwrap_or_default() + &auth;
    std::fs::write(&path, text).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);
    let http = &gw.http;

    let anon = http
        .post(&url)
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status().as_u16(), 401);
    let challenge = anon.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    let grpc_anon = http
        .post(format!("{}/lf.a2a.v1.A2AService/ListTasks", gw.base))
        .header("content-type", "application/grpc")
        .send()
        .await
        .unwrap();
    assert_eq!(grpc_anon.status().as_u16(), 401, "gRPC is behind the same gate");

    let token = |tenant: &str, scopes: &str| issuer.sign(&issuer.claims(RESOURCE, tenant, "someone", scopes, 300));
    let wrong_scope = token("red", "invocations:read");
    let (status, _) = rpc(http, &url, Some(&wrong_scope), "ListTasks", json!({})).await;
    assert_eq!(status, 403, "a token without a2a:call is refused");

    let red = token("red", "a2a:call");
    let blue = token("blue", "a2a:call");
    let (_, sent) = rpc(http, &url, Some(&red), "SendMessage", json!({"message": message("tck-input-required")})).await;
    let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    // Blue sees nothing of red's task: not found, never forbidden.
    for (method, params) in [
        ("GetTask", json!({"id": task})),
        ("CancelTask", json!({"id": task})),
        ("SubscribeToTask", json!({"id": task})),
        ("CreateTaskPushNotificationConfig", json!({"taskId": task, "url": "http://127.0.0.1:9/hook"})),
        (
            "SendMessage",
            json!({"message": {"messageId": "follow-up", "taskId": task, "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        ),
    ] {
        let (_, body) = rpc(http, &url, Some(&blue), method, params).await;
        assert_eq!(body["error"]["code"], -32001, "{method}: {body}");
    }
    let (_, listed) = rpc(http, &url, Some(&blue), "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    assert_eq!(listed["result"]["totalSize"], 0);
    let rest = http
        .get(format!("{url}/rest/tasks/{task}"))
        .header("a2a-version", "1.0")
        .bearer_auth(&blue)
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status().as_u16(), 404);
    // Red still has it, untouched.
    let (_, mine) = rpc(http, &url, Some(&red), "GetTask", json!({"id": task})).await;
    assert_eq!(mine["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{mine}");
    let (_, red_list) = rpc(http, &url, Some(&red), "ListTasks", json!({})).await;
    assert_eq!(red_list["result"]["totalSize"], 1);

    // The same through the official Python SDK on every binding, gRPC included.
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let out = py(&["isolation", &gw.base, binding, &red, &blue]).await;
        let checks = lines(&out);
        assert!(out.status.success(), "{binding}: {checks:#?}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(checks.iter().filter(|c| c["ok"] == true).count(), 8, "{binding}: {checks:#?}");
    }

    // Each agent's own scope, on every binding: gRPC routes by the request's tenant, so the
    // service checks the scope of the agent it routed to.
    let vault_only = token("red", "vault:call");
    let vault_url = format!("{}/a2a/vault", gw.base);
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let refused = lines(&py(&["route", &vault_url, binding, "open", &red]).await).pop().unwrap_or_default();
        assert!(refused["error"].is_string(), "{binding}: a2a:call alone must not reach vault: {refused}");
        let ok = lines(&py(&["route", &vault_url, binding, "open", &vault_only]).await).pop().unwrap_or_default();
        assert_eq!(ok["reply"], "echo: open", "{binding}: {ok}");
    }
    let refused = lines(&py(&["route", &format!("{}/a2a/tck", gw.base), "GRPC", "x", &vault_only]).await)
        .pop()
        .unwrap_or_default();
    assert!(
        refused["error"].as_str().is_some_and(|e| e.contains("a2a:call")),
        "vault:call alone must not reach tck over gRPC: {refused}"
    );

    // The card declares how to authenticate.
    let card: Value = http
        .get(format!("{}/.well-known/agent-card.json", gw.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer", "{card}");
    assert!(card["securitySchemes"]["oidc1"]["openIdConnectSecurityScheme"]["openIdConnectUrl"].is_string());
    assert_eq!(card["securityRequirements"][1]["schemes"]["oidc1"]["list"], json!(["a2a:call"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_subscriptions_end_at_shutdown_so_the_gateway_drains() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let mut gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);
    let (_, sent) = rpc(&gw.http, &url, None, "SendMessage", json!({"message": message("tck-input-required")})).await;
    let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    // An input-required task never ends by itself: this stream stays open.
    let resp =
        gw.http.get(format!("{url}/rest/tasks/{task}:subscribe")).header("a2a-version", "1.0").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body = tokio::spawn(async move { resp.text().await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t0 = std::time::Instant::now();
    assert!(gw.terminate(), "clean exit");
    assert!(t0.elapsed() < Duration::from_secs(5), "shutdown did not wait for the grace period: {:?}", t0.elapsed());
    let text = body.await.unwrap().unwrap();
    assert!(text.starts_with("data: {\"task\""), "the stream began with the task and then ended: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_is_retried_until_acknowledged_and_arrives_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);
    let hook = switchyard_tests::a2a::Webhook::start(2).await;
    // Inline config on the first message: the task's own updates are delivered.
    let (_, sent) = rpc(
        &gw.http,
        &url,
        None,
        "SendMessage",
        json!({"message": message("tck-stream-001"), "configuration": {"taskPushNotificationConfig": {
            "url": hook.url, "token": "tok-1", "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}}}),
    )
    .await;
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let mut hits = Vec::new();
    for _ in 0..150 {
        hits = hook.hits();
        if hits.iter().filter(|h| h.status == 200).count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let statuses: Vec<u16> = hits.iter().map(|h| h.status).collect();
    assert_eq!(statuses, [503, 503, 200, 200, 200], "retried with backoff until a 2xx, then the rest: {hits:#?}");
    let delivered: Vec<String> = hits
        .iter()
        .filter(|h| h.status == 200)
        .map(|h| match (h.body.get("statusUpdate"), h.body.get("artifactUpdate")) {
            (Some(s), _) => s["status"]["state"].as_str().unwrap_or_default().to_string(),
            (_, Some(_)) => "artifact".into(),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(delivered, ["TASK_STATE_WORKING", "artifact", "TASK_STATE_COMPLETED"], "in order");
    let first = &hits[0];
    assert_eq!(first.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(first.header("x-a2a-notification-token"), Some("tok-1"));
    assert_eq!(first.header("content-type"), Some("application/a2a+json"));
    assert_eq!(hits[0].body, hits[2].body, "the retried delivery is the same event");
    // The webhook's credentials are sealed at rest: in no database row, no invocation request.
    let runs = gw.all("default").await;
    assert!(!serde_json::to_string(&runs).unwrap_or_default().contains("s3cret"), "{runs:#?}");
    let db = std::fs::read(dir.path().join("d/switchyard.db")).unwrap_or_default();
    let wal = std::fs::read(dir.path().join("d/switchyard.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(!bytes.windows(6).any(|w| w == b"s3cret"), "a webhook credential in clear in the database");
        assert!(!bytes.windows(5).any(|w| w == b"tok-1"), "a notification token in clear in the database");
    }
    // The console lists the task for its tenant, and not for another.
    let id = sent["result"]["task"]["id"].as_str().unwrap_or_default().to_string();
    let (status, page) = gw.console("default", "/console/tasks").await;
    assert!(status == 200 && page.contains(&id) && page.contains("TASK_STATE_COMPLETED"), "{page}");
    let (_, page) = gw.console("other", "/console/tasks").await;
    assert!(!page.contains(&id), "another tenant's tasks page: {page}");
    // The owner reads its config back without the webhook's credentials (write-only; before,
    // they came back in clear).
    let task = sent["result"]["task"]["id"].clone();
    let (_, listed) = rpc(&gw.http, &url, None, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    let auth = &listed["result"]["configs"][0]["authentication"];
    assert!(auth["scheme"] == "Bearer" && auth.get("credentials").is_none(), "{listed}");
    assert!(!listed.to_string().contains("s3cret"), "{listed}");
}

/// Two replicas on one PostgreSQL database: subscribers on both see the same events in the same
/// order, and the subscriber on the replica that does not run the task gets the end of it about
/// when the one on the running replica does — woken by the change feed (`LISTEN/NOTIFY`), not by
/// its poll (250 ms without a feed; 2 s with one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_on_two_replicas_see_the_same_events_in_the_same_order() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let store = switchyard_tests::pg::database().await;
    let replica = |n: &str| Options {
        data_dir: dir.path().join(n),
        config: Some(config.clone()),
        store_url: Some(store.clone()),
        ..Options::default()
    };
    let (a, b) = (Gateway::start(replica("a")), Gateway::start(replica("b")));
    // Each subscriber: the events after the snapshot, and when the last one arrived.
    let subscribe = |base: String, task: String| async move {
        let mut resp = reqwest::Client::new()
            .post(format!("{base}/a2a/tck/rest/tasks/{task}:subscribe"))
            .header("a2a-version", "1.0")
            .send()
            .await
            .unwrap();
        let (mut text, mut last) = (String::new(), std::time::Instant::now());
        while let Ok(Some(chunk)) = resp.chunk().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            last = std::time::Instant::now();
        }
        let events = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v.get("task").is_none())
            .collect::<Vec<_>>();
        (events, last)
    };
    let mut lags = Vec::new();
    for n in 0..3 {
        let (_, sent) = rpc(
            &a.http,
            &format!("{}/a2a/tck", a.base),
            None,
            "SendMessage",
            json!({"message": message(&format!("test-resubscribe-message-id-{n}")), "configuration": {"returnImmediately": true}}),
        )
        .await;
        let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let ((on_a, at_a), (on_b, at_b)) =
            tokio::join!(subscribe(a.base.clone(), task.clone()), subscribe(b.base.clone(), task.clone()));
        assert!(!on_a.is_empty(), "events after the snapshot");
        assert_eq!(on_a, on_b, "the same events, in the same order, on both replicas");
        let end = on_a.last().map(|e| e["statusUpdate"]["status"]["state"].clone());
        assert_eq!(end, Some(json!("TASK_STATE_COMPLETED")));
        lags.push(if at_b > at_a { at_b - at_a } else { at_a - at_b });
    }
    println!("the other replica's subscriber got each task's end {lags:?} apart");
    assert!(lags.iter().all(|l| *l < Duration::from_millis(100)), "{lags:?}: polled, not woken by the feed?");
}

/// A streaming follow-up starts from the task as it was before the message, so the run's own
/// end is always in the stream and the stream ends (it used to start after the run's terminal
/// event when the run was quick, and hang).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_follow_up_ends_with_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);
    for round in 0..5 {
        let (_, asked) =
            rpc(&gw.http, &url, None, "SendMessage", json!({"message": message("tck-input-required")})).await;
        let task = &asked["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
        let mut follow = message("tck-complete-task");
        follow["taskId"] = task["id"].clone();
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": follow}});
        let resp = gw.http.post(&url).header("a2a-version", "1.0").json(&body).send();
        let text = tokio::time::timeout(Duration::from_secs(10), async { resp.await.ok()?.text().await.ok() })
            .await
            .unwrap_or_else(|_| panic!("round {round}: the follow-up's stream never ended"))
            .unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect();
        assert_eq!(
            events.first().map(|e| e["result"]["task"]["status"]["state"].clone()),
            Some(json!("TASK_STATE_INPUT_REQUIRED")),
            "round {round}: {events:#?}"
        );
        let last = events.last().map(|e| e["result"]["statusUpdate"]["status"]["state"].clone());
        assert_eq!(last, Some(json!("TASK_STATE_COMPLETED")), "round {round}: {events:#?}");
    }
}

/// A task holds at most 16 push notification configs; the 17th is refused and changes nothing,
/// while re-storing one it already holds is allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_per_task_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);
    let (_, sent) = rpc(&gw.http, &url, None, "SendMessage", json!({"message": message("tck-input-required")})).await;
    let task = sent["result"]["task"]["id"].clone();
    let create =
        |n: usize| json!({"taskId": task, "id": format!("cfg-{n}"), "url": format!("http://127.0.0.1:9/hook/{n}")});
    for n in 0..16 {
        let (_, made) = rpc(&gw.http, &url, None, "CreateTaskPushNotificationConfig", create(n)).await;
        assert_eq!(made["result"]["id"], format!("cfg-{n}"), "{made}");
    }
    let (_, refused) = rpc(&gw.http, &url, None, "CreateTaskPushNotificationConfig", create(16)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("16"), "{refused}");
    let (_, again) = rpc(&gw.http, &url, None, "CreateTaskPushNotificationConfig", create(3)).await;
    assert_eq!(again["result"]["id"], "cfg-3", "replacing one it holds is fine: {again}");
    let (_, listed) = rpc(&gw.http, &url, None, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    assert_eq!(listed["result"]["configs"].as_array().map(Vec::len), Some(16), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_agent_is_reached_on_every_binding_its_card_lists() {
    // Two agents on one gateway: the Python SDK, given each agent's own card, must reach that
    // agent on JSON-RPC, HTTP+JSON and gRPC (gRPC has one service path: the card's interface
    // names the agent in its `tenant`, which the SDK puts in every request).
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "\n[[a2a.agents]]\nname = \"echo\"\nkind = \"echo\"\n", "anonymous = true");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let out = py(&["route", &format!("{}/a2a/echo", gw.base), binding, "which agent?"]).await;
        let got = lines(&out).pop().unwrap_or_else(|| panic!("{binding}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(got["reply"], "echo: which agent?", "{binding} reached another agent: {got}");
        assert_eq!(got["state"], "TASK_STATE_COMPLETED", "{got}");
    }
    // The task is the echo agent's whichever binding made it, and one space holds them all.
    let (_, listed) = rpc(&gw.http, &format!("{}/a2a/echo", gw.base), None, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 3, "{listed}");
    let (_, tck) = rpc(&gw.http, &format!("{}/a2a/tck", gw.base), None, "ListTasks", json!({})).await;
    assert_eq!(tck["result"]["totalSize"], 0, "{tck}");
}
