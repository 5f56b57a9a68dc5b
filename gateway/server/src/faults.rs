//! Fault injection for crash tests: with `SWITCHYARD_FAULT_PAUSE=before_dispatch`,
//! `attempt_recorded` or `after_upstream_reply`, every driver stops forever at that point, so a test can `kill -9` the
//! process there; with `before_shared_commit`, the SQLite writer stops forever before committing
//! a batch of many calls' changes (after a few hundred changes). Off unless the variable is set; a warning is logged
//! when it is.

use async_trait::async_trait;
use switchyard_contract::{FaultHook, FaultPoint, InvocationId};

/// Pauses drivers forever at one point.
#[derive(Debug, Clone, Copy)]
pub struct PauseAt(pub FaultPoint);

impl PauseAt {
    /// Reads `SWITCHYARD_FAULT_PAUSE`; `Err` names the accepted values.
    pub fn from_env() -> Result<Option<Self>, switchyard_contract::InvalidConfig> {
        match std::env::var("SWITCHYARD_FAULT_PAUSE").ok().as_deref() {
            None | Some("") => Ok(None),
            Some("before_dispatch") => Ok(Some(Self(FaultPoint::BeforeDispatch))),
            Some("attempt_recorded") => Ok(Some(Self(FaultPoint::AttemptRecorded))),
            Some("after_upstream_reply") => Ok(Some(Self(FaultPoint::AfterUpstreamReply))),
            Some(SHARED_COMMIT) => Ok(None),
            Some(other) => Err(switchyard_contract::InvalidConfig(format!(
                "SWITCHYARD_FAULT_PAUSE=`{other}` is not one of before_dispatch, attempt_recorded, after_upstream_reply, \
                 {SHARED_COMMIT}"
            ))),
        }
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
        if point == self.0 {
            tracing::warn!(invocation.id = %invocation, ?point, "fault injection: pausing this invocation forever");
            std::future::pending::<()>().await;
        }
    }

    fn may_pause(&self, point: FaultPoint) -> bool {
        point == self.0
    }
}
