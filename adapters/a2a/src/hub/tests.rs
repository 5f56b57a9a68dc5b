use super::*;
use crate::testing::Counting;
use switchyard_contract::Principal;

fn task(id: &str) -> Task {
    Task {
        id: id.into(),
        context_id: "ctx".into(),
        status: TaskStatus { state: TaskState::Working, message: None, timestamp: None },
        artifacts: None,
        history: None,
        metadata: None,
    }
}

fn working() -> Change {
    Change::Status(TaskStatus { state: TaskState::Working, message: None, timestamp: None })
}

/// A change to one task wakes its own followers, not every stream, and nothing polls per
/// stream: a subscriber of task `a` does not re-read its log while task `b` changes twenty
/// times and then nothing happens for two sweeps; it sees `a`'s own change at once, and one
/// made by another process at the next sweep.
#[tokio::test]
async fn a_task_change_wakes_only_that_tasks_followers() {
    use futures::StreamExt as _;
    let store = Arc::new(Counting::default());
    let sealer = crate::sealing::CredentialSealer::from_hex(&"ab".repeat(32)).unwrap();
    let hub = Hub::new(store.clone(), None, 1 << 20, sealer);
    let tenant = TenantId::new("acme").unwrap();
    let scope = TaskScope::of(&Principal::new(tenant, "alice"), "agent");
    let cursor = RunCursor { invocation: InvocationId::new(), step: 0 };
    for id in ["a", "b"] {
        assert!(hub.create(&scope, "echo", &task(id), cursor, Vec::new()).await.unwrap());
    }
    let mut stream = Box::pin(hub.follow(TaskId::from("a"), 1, false));
    let waiting = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
    assert!(waiting.is_err(), "nothing new on `a` yet: {waiting:?}");
    let before = store.reads("a");
    for _ in 0..20 {
        hub.apply_all(&scope, &TaskId::from("b"), None, vec![working()]).await.unwrap();
    }
    // Idle for more than two sweeps: the sweep reads versions, never a stream's events.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(store.reads("a"), before, "`b`'s changes, or a poll, made `a`'s follower read");
    hub.apply_all(&scope, &TaskId::from("a"), None, vec![working()]).await.unwrap();
    let next = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
    assert!(matches!(next, Ok(Some(Ok(StreamResponse::StatusUpdate(_))))), "{next:?}");
    // A change by another process on the same store (no feed): the sweep finds it.
    let sealer = crate::sealing::CredentialSealer::from_hex(&"ab".repeat(32)).unwrap();
    let elsewhere = Hub::new(store.clone(), None, 1 << 20, sealer);
    elsewhere.apply_all(&scope, &TaskId::from("a"), None, vec![working()]).await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(2), stream.next()).await;
    assert!(matches!(next, Ok(Some(Ok(StreamResponse::StatusUpdate(_))))), "{next:?}");
}

/// Rows keep the names the wire uses (as written before the state was typed).
#[test]
fn stored_states_are_the_wire_names() {
    use TaskState::*;
    for s in [Unspecified, Submitted, Working, Completed, Failed, Canceled, InputRequired, Rejected, AuthRequired] {
        let stored = stored_state(&s);
        assert_eq!(stored.as_str(), state_name(&s), "{s:?}");
        assert_eq!(TaskStateName::parse(stored.as_str()), Some(stored));
    }
}
