//! The engine-guarantee tests' harness (`tests/tests/engine_guarantees.rs`): a database both
//! engines of a test can open (SQLite or PostgreSQL), an engine over a scripted upstream, the
//! calls it is given, and waits on what becomes of them.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use switchyard_contract::engine::RetryPolicy;
use switchyard_contract::{
    Engine, EngineConfig, Event, FaultHook, FaultPoint, IngressKey, Invocation, InvocationId, InvocationStore,
    Invocations, Principal, StateName, Submission, TenantId, WorkerId,
};
use switchyard_store::StoreOptions;
use tokio::sync::watch;

use crate::upstream::{OneUpstream, Scripted};

/// A database both engines of a test can open.
#[derive(Debug)]
pub struct Db {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    pub async fn open(&self) -> Arc<dyn InvocationStore> {
        switchyard_store::connect(&self.url, &StoreOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .invocations
    }
}

pub async fn sqlite() -> Db {
    let (dir, url) = crate::sqlite_url();
    Db { url, _dir: Some(dir) }
}

pub async fn postgres() -> Db {
    Db { url: crate::pg::database().await, _dir: None }
}

pub fn config(ttl_ms: u64) -> EngineConfig {
    EngineConfig {
        worker: WorkerId::new(),
        lease_ttl: Duration::from_millis(ttl_ms),
        recovery_interval: Duration::from_millis(100),
        attempt_timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 3,
            backoff_base: Duration::from_millis(20),
            backoff_max: Duration::from_millis(100),
        },
        watch_poll: Duration::from_millis(50),
        ..EngineConfig::default()
    }
}

pub fn engine(
    store: Arc<dyn InvocationStore>,
    up: &Arc<Scripted>,
    hook: Arc<dyn FaultHook>,
    cfg: EngineConfig,
) -> Engine {
    Engine::builder(store, cfg).faults(hook).build(Arc::new(OneUpstream(up.clone()))).unwrap_or_else(|e| panic!("{e}"))
}

pub fn alice() -> Principal {
    Principal::new(TenantId::new("acme").unwrap_or_else(|e| panic!("{e}")), "alice")
}

pub fn call(op: &str, request: Value, key: Option<&str>) -> Submission {
    Submission {
        principal: alice(),
        upstream: "test".into(),
        operation: op.into(),
        request,
        ingress_key: key.map(|k| IngressKey::new(k).unwrap_or_else(|e| panic!("{e}"))),
        ingress: switchyard_contract::Ingress::Admin,
        caller: None,
        context: None,
        grant: None,
        parent: None,
        trace: None,
    }
}

pub async fn submit(e: &Engine, op: &str) -> Invocation {
    e.submit(call(op, json!({}), None)).await.unwrap_or_else(|err| panic!("{err}")).invocation
}

/// Waits (up to 10 s) until the invocation is in `state`.
pub async fn until(e: &Engine, id: InvocationId, state: StateName) -> Invocation {
    for _ in 0..1000 {
        let inv = e.get(&alice().tenant, id).await.unwrap_or_else(|err| panic!("{err}"));
        if inv.state.name() == state {
            return inv;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let inv = e.get(&alice().tenant, id).await.ok();
    panic!("{id} never became {state:?}: {inv:?}");
}

pub async fn events(e: &Engine, id: InvocationId) -> Vec<Event> {
    e.events(&alice().tenant, id, 0, 1000).await.unwrap_or_else(|err| panic!("{err}"))
}

pub fn kinds(evs: &[Event]) -> Vec<&'static str> {
    evs.iter().map(|e| e.kind.name()).collect()
}

/// A fault hook that blocks drivers at one point until released (or forever).
#[derive(Debug)]
pub struct Gate {
    point: FaultPoint,
    pub open: watch::Sender<bool>,
}

impl Gate {
    pub fn new(point: FaultPoint) -> Arc<Self> {
        Arc::new(Self { point, open: watch::channel(false).0 })
    }
}

#[async_trait]
impl FaultHook for Gate {
    async fn reached(&self, point: FaultPoint, _: InvocationId) {
        if point == self.point {
            let _ = self.open.subscribe().wait_for(|o| *o).await;
        }
    }

    fn may_pause(&self, point: FaultPoint) -> bool {
        point == self.point
    }
}
