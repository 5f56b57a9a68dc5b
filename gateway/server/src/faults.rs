//! Fault injection for crash tests: with `SWITCHYARD_FAULT_PAUSE=before_dispatch`,
//! `attempt_recorded` or `after_upstream_reply`, every driver stops forever at that point, so a test can `kill -9` the
//! process there (`<point>:<ms>`: it stops that long, then goes on — a window to `SIGSTOP` it in); with `before_shared_commit`, the SQLite writer stops forever before committing
//! a batch of many calls' changes (after a few hundred changes). Off unless the variable is set; a warning is logged
//! when it is.

use async_trait::async_trait;
use switchyard_contract::{FaultHook, FaultPoint, InvocationId};

/// Pauses drivers at one point: forever, or for a while.
#[derive(Debug, Clone, Copy)]
pub struct PauseAt(pub FaultPoint, pub Option<std::time::Duration>);

impl PauseAt {
    /// Reads `SWITCHYARD_FAULT_PAUSE`; `Err` names the accepted values.
    pub fn from_env() -> Result<Option<Self>, switchyard_contract::InvalidConfig> {
        let value = std::env::var("SWITCHYARD_FAULT_PAUSE").unwrap_or_default();
        let (point, ms) = match value.split_once(':') {
            Some((p, ms)) => (p, Some(ms)),
            None => (value.as_str(), None),
        };
        let bad = || {
            switchyard_contract::InvalidConfig(format!(
                "SWITCHYARD_FAULT_PAUSE=`{value}` is not one of before_dispatch, attempt_recorded, after_upstream_reply \
                 (each optionally `:<ms>`), {SHARED_COMMIT}"
            ))
        };
        let point = match point {
            "" | SHARED_COMMIT => return Ok(None),
            "before_dispatch" => FaultPoint::BeforeDispatch,
            "attempt_recorded" => FaultPoint::AttemptRecorded,
            "after_upstream_reply" => FaultPoint::AfterUpstreamReply,
            _ => return Err(bad()),
        };
        let pause = ms.map(|ms| ms.parse().map(std::time::Duration::from_millis).map_err(|_| bad())).transpose()?;
        Ok(Some(Self(point, pause)))
    }
}

const SHARED_COMMIT: &str = "before_shared_commit";

/// Whether `SWITCHYARD_FAULT_PAUSE=before_shared_commit` asks the store's writer to stop before
/// a shared commit.
pub fn pauses_shared_commit() -> bool {
    std::env::var("SWITCHYARD_FAULT_PAUSE").is_ok_and(|v| v == SHARED_COMMIT)
}

#[async_trait]
impl FaultHook for PauseAt {
    async fn reached(&self, point: FaultPoint, invocation: InvocationId) {
        if point != self.0 {
            return;
        }
        match self.1 {
            Some(pause) => {
                tracing::warn!(invocation.id = %invocation, ?point, ?pause, "fault injection: pausing this invocation");
                tokio::time::sleep(pause).await;
            }
            None => {
                tracing::warn!(invocation.id = %invocation, ?point, "fault injection: pausing this invocation forever");
                std::future::pending::<()>().await;
            }
        }
    }

    fn may_pause(&self, point: FaultPoint) -> bool {
        point == self.0
    }
}
