//! The engine's settings, and the hook fault tests pause at.

use std::time::Duration;

use async_trait::async_trait;

use super::policy::RetryPolicy;
use crate::id::{InvocationId, WorkerId};

/// Points in a driver's life where a [`FaultHook`] is consulted (fault tests pause here and
/// kill the process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// Admitted and leased, before the attempt is recorded: nothing has gone upstream.
    BeforeDispatch,
    /// The attempt is recorded (G3), and the upstream has not been called yet.
    AttemptRecorded,
    /// The upstream replied; its outcome is not committed yet.
    AfterUpstreamReply,
}

/// A test hook called at each [`FaultPoint`]. Production wiring uses [`NoFaults`].
#[async_trait]
pub trait FaultHook: Send + Sync {
    async fn reached(&self, point: FaultPoint, invocation: InvocationId);

    /// Whether [`reached`](Self::reached) may stop a driver at `point`. The engine sends a
    /// read's first attempt while its admission commits only when nothing may stop it before
    /// the dispatch ([`FaultPoint::BeforeDispatch`], [`FaultPoint::AttemptRecorded`]), so that a
    /// test pausing there sees nothing sent.
    fn may_pause(&self, _point: FaultPoint) -> bool {
        true
    }
}

/// The hook that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFaults;

#[async_trait]
impl FaultHook for NoFaults {
    async fn reached(&self, _: FaultPoint, _: InvocationId) {}

    fn may_pause(&self, _: FaultPoint) -> bool {
        false
    }
}

/// Engine settings. `validate` names the bad field.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub worker: WorkerId,
    /// How long a lease lasts without renewal; drivers renew every third of it.
    pub lease_ttl: Duration,
    /// How often recovery looks for expired leases (it also runs at start-up).
    pub recovery_interval: Duration,
    /// How many expired invocations one recovery pass takes.
    pub recovery_batch: u32,
    /// An attempt still running after this is lost (a `write` becomes `unknown`).
    pub attempt_timeout: Duration,
    pub retry: RetryPolicy,
    /// How often a watcher re-reads the store when no local change woke it (other replicas).
    /// With a [`ChangeFeed`](crate::ChangeFeed) attached, other replicas' changes wake it too,
    /// and it polls only every 10 s (or this, if longer), as a fallback for lost notices.
    pub watch_poll: Duration,
    /// How often recovery scans the `unknown` invocations of upstreams that resolve them from
    /// evidence ([`Upstream::resolver`](crate::Upstream::resolver)); one page per upstream a pass.
    pub resolve_interval: Duration,
    /// How long a call held for approval waits; then recovery fails it `approval_expired`.
    pub approval_ttl: Duration,
    /// Send a `read_only` call's first attempt while its admission commits (its caller is still
    /// answered only after that commit). Off: it is sent once the admission committed, as a
    /// write's attempt is.
    pub send_reads_with_admission: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            worker: WorkerId::new(),
            lease_ttl: Duration::from_secs(30),
            recovery_interval: Duration::from_secs(5),
            recovery_batch: 100,
            attempt_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            watch_poll: Duration::from_millis(250),
            resolve_interval: Duration::from_secs(1),
            approval_ttl: Duration::from_secs(24 * 3600),
            send_reads_with_admission: true,
        }
    }
}

impl EngineConfig {
    pub fn validate(&self) -> Result<(), crate::error::InvalidConfig> {
        if self.lease_ttl < Duration::from_millis(300) {
            return Err("engine.lease_ttl_ms must be at least 300".into());
        }
        if self.retry.backoff_max * 2 > self.lease_ttl {
            return Err("engine.backoff_max_ms must be at most half of engine.lease_ttl_ms".into());
        }
        if self.retry.max_attempts == 0 || self.retry.max_attempts > 100 {
            return Err("engine.max_attempts must be within 1..=100".into());
        }
        if self.recovery_batch == 0
            || self.attempt_timeout.is_zero()
            || self.recovery_interval.is_zero()
            || self.resolve_interval.is_zero()
        {
            return Err("engine.recovery_batch, attempt_timeout_ms and recovery_interval_ms must be positive".into());
        }
        Ok(())
    }

    pub(super) fn ttl_ms(&self) -> i64 {
        i64::try_from(self.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }
}
