//! The built-in agents' engine upstream, in process on a real SQLite task store: a run request
//! is checked against the principal that submitted it, and a run driven again after a crash
//! continues where it stopped (issue 11, item 7 and the agent-upstream side of the isolation fix).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_a2a::agent::{AgentKind, AgentUpstream};
use switchyard_a2a::hub::Hub;
use switchyard_a2a::run::{RunRequest, submitted};
use switchyard_contract::{
    AttemptId, DispatchCall, EffectClass, InvocationId, Principal, RunCursor, Target, TaskScope, TaskStore, TenantId,
    Upstream, UpstreamError,
};
use switchyard_store::StoreOptions;

async fn hub() -> (tempfile::TempDir, Hub, Arc<dyn TaskStore>) {
    let (dir, url) = switchyard_tests::sqlite_url();
    let stores = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    let sealer =
        switchyard_a2a::sealing::CredentialSealer::from_hex(&"5a".repeat(32)).unwrap_or_else(|e| panic!("{e}"));
    (dir, Hub::new(stores.tasks.clone(), None, 64 * 1024, sealer), stores.tasks)
}

/// A scope of the callers' subject (`someone`) from its stored form (`<tenant>/<space>`).
fn scope(key: &str) -> TaskScope {
    TaskScope::stored(key, "someone").unwrap_or_else(|e| panic!("{e}"))
}

fn run(scope: &str, task: &str, new_task: bool, push: Option<Value>) -> RunRequest {
    let mut v = json!({"scope": {"key": scope, "owner": "someone"}, "agent": "echo", "taskId": task, "contextId": "ctx-1", "newTask": new_task,
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    if let Some(p) = push {
        v["push"] = p;
    }
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}

fn call(tenant: &str, inv: InvocationId, req: &RunRequest) -> DispatchCall {
    DispatchCall {
        invocation: inv,
        attempt: AttemptId::new(),
        attempt_no: 1,
        principal: Principal::new(TenantId::new(tenant).unwrap_or_else(|e| panic!("{e}")), "someone"),
        target: Target {
            upstream: "a2a-agent-echo".into(),
            operation: "SendMessage".into(),
            effect: EffectClass::ReadOnly,
        },
        request: serde_json::to_value(req).unwrap_or_else(|e| panic!("{e}")),
        context: None,
        send_by: tokio::time::Instant::now() + Duration::from_secs(10),
    }
}

#[tokio::test]
async fn a_run_with_an_inline_push_config_driven_again_finishes_its_task() {
    let (_dir, hub, store) = hub().await;
    let up = AgentUpstream::new("echo".into(), AgentKind::Echo, hub.clone(), None, None);
    let inv = InvocationId::new();
    let req = run("red/", "task-1", true, Some(json!({"url": "https://hooks.example.com/x"})));
    // The first drive created the task (step 0) and stopped there: a crash.
    let step = RunCursor { invocation: inv, step: 0 };
    hub.create(&scope("red/"), "echo", &submitted(&req), step, Vec::new()).await.unwrap_or_else(|e| panic!("{e:?}"));
    // Driven again: the task must finish, not stay submitted.
    let out = up.dispatch(&call("red", inv, &req)).await.unwrap();
    assert_eq!(out["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{out}");
    let rec = store.get(&scope("red/"), &"task-1".into()).await.unwrap().unwrap_or_else(|| panic!("no task"));
    assert_eq!(rec.state.as_str(), "TASK_STATE_COMPLETED");
    assert_eq!(store.push_configs(&"task-1".into()).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_run_request_is_checked_against_the_principal_that_submitted_it() {
    let (_dir, hub, store) = hub().await;
    let up = AgentUpstream::new("echo".into(), AgentKind::Echo, hub.clone(), None, None);
    let red = run("red/", "task-red", true, None);
    up.dispatch(&call("red", InvocationId::new(), &red)).await.unwrap();
    let refused = |r: Result<Value, UpstreamError>| match r {
        Err(UpstreamError::Rejected { code, .. }) => code.as_str().to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let steal = Some(json!({"url": "https://attacker.example/steal"}));
    // Blue names red's scope: refused before anything is written.
    let follow_up = run("red/", "task-red", false, steal.clone());
    assert_eq!(refused(up.dispatch(&call("blue", InvocationId::new(), &follow_up)).await), "PERMISSION_DENIED");
    // Another subject of red's tenant naming red's task (a run whose scope is not its own).
    let mut other_subject = follow_up.clone();
    other_subject.scope = TaskScope::stored("red/", "mallory").unwrap();
    assert_eq!(refused(up.dispatch(&call("red", InvocationId::new(), &other_subject)).await), "PERMISSION_DENIED");
    // Blue in its own scope, with red's task id: that task is not blue's.
    let own_scope = run("blue/", "task-red", false, steal.clone());
    assert_eq!(refused(up.dispatch(&call("blue", InvocationId::new(), &own_scope)).await), "TASK_NOT_FOUND");
    let as_new = run("blue/", "task-red", true, steal);
    assert!(up.dispatch(&call("blue", InvocationId::new(), &as_new)).await.is_err(), "red's task id is taken");
    // Another agent's request is refused too.
    let mut other = run("blue/", "task-x", true, None);
    other.agent = "tck".into();
    assert_eq!(refused(up.dispatch(&call("blue", InvocationId::new(), &other)).await), "PERMISSION_DENIED");
    // Red's task is as red left it, with no push config and no foreign message.
    let rec = store.get(&scope("red/"), &"task-red".into()).await.unwrap().unwrap_or_else(|| panic!("gone"));
    assert_eq!(rec.version, 3, "created, working, completed: nothing more");
    assert!(store.push_configs(&"task-red".into()).await.unwrap().is_empty());
    assert!(store.get(&scope("blue/"), &"task-red".into()).await.unwrap().is_none());
}
