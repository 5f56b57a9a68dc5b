//! Store wrappers for engine tests: a database an engine loses contact with, and admissions
//! held back mid-commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use switchyard_contract::{
    Admission, Error, Event, IngressKey, Invocation, InvocationId, InvocationStore, ListQuery, NewInvocation, Page,
    TenantId, Transition, WorkerId,
};
use tokio::sync::watch;

/// A store one engine loses contact with while `cut` is set (a network partition), and whose
/// admissions wait while `hold_admissions` is set (a commit that takes its time).
pub struct Partition {
    inner: Arc<dyn InvocationStore>,
    cut: AtomicBool,
    held: watch::Sender<bool>,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition").field("cut", &self.cut).finish_non_exhaustive()
    }
}

impl Partition {
    pub fn new(inner: Arc<dyn InvocationStore>) -> Arc<Self> {
        Arc::new(Self { inner, cut: AtomicBool::new(false), held: watch::channel(false).0 })
    }

    /// Cuts the engine off from the database, or reconnects it.
    pub fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
    }

    /// Holds admissions back before they reach the database, or lets them go.
    pub fn hold_admissions(&self, held: bool) {
        self.held.send_replace(held);
    }

    fn check(&self) -> Result<(), Error> {
        if self.cut.load(Ordering::SeqCst) { Err(Error::unavailable("partitioned from the database")) } else { Ok(()) }
    }
}

#[async_trait]
impl InvocationStore for Partition {
    async fn admit(&self, d: NewInvocation) -> Result<Admission, Error> {
        let _ = self.held.subscribe().wait_for(|held| !*held).await;
        self.check()?;
        self.inner.admit(d).await
    }
    async fn transition(&self, id: InvocationId, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        self.check()?;
        self.inner.transition(id, f).await
    }
    async fn get(&self, t: Option<&TenantId>, id: InvocationId) -> Result<Option<Invocation>, Error> {
        self.check()?;
        self.inner.get(t, id).await
    }
    async fn by_key(&self, t: &TenantId, key: &IngressKey) -> Result<Option<Invocation>, Error> {
        self.check()?;
        self.inner.by_key(t, key).await
    }
    async fn list(&self, t: &TenantId, q: &ListQuery) -> Result<Page, Error> {
        self.check()?;
        self.inner.list(t, q).await
    }
    async fn events(&self, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        self.check()?;
        self.inner.events(id, after, limit).await
    }
    async fn acquire_expired(&self, w: WorkerId, ttl: i64, limit: u32) -> Result<Vec<Invocation>, Error> {
        self.check()?;
        self.inner.acquire_expired(w, ttl, limit).await
    }
    async fn release_leases(&self, w: WorkerId) -> Result<u64, Error> {
        self.check()?;
        self.inner.release_leases(w).await
    }
    async fn now(&self) -> Result<i64, Error> {
        self.check()?;
        self.inner.now().await
    }
}
