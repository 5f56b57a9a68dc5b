//! The invocation journal. Every transition appends events with a per-invocation sequence that
//! starts at 1 and has no gaps (G9); `watch` resumes strictly after a given sequence number.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Millis;
use crate::digest::RequestDigest;
use crate::error::FailureRecord;
use crate::id::{AttemptId, EventId, InvocationId, WorkerId};
use crate::principal::{IngressKey, Principal, Target};
use crate::verdict::{Decision, Fence, Resolution};

/// One journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    pub invocation: InvocationId,
    /// Invariant: 1, 2, 3, … per invocation, in commit order.
    pub seq: u64,
    pub at_ms: Millis,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    Admitted {
        principal: Principal,
        target: Target,
        digest: RequestDigest,
        ingress_key: Option<IngressKey>,
        /// Held for approval (the invocation starts `awaiting_approval`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        held: Option<crate::verdict::Hold>,
    },
    /// An approver let a held call run.
    Approved {
        by: Principal,
        /// The approval's proof: a single-use grant bound to this call (its id and digest),
        /// signed by the gateway, which the policy enforcement point checks and spends before
        /// the call runs. Absent where no grant key is configured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<String>,
    },
    DispatchStarted {
        attempt: AttemptId,
        attempt_no: u32,
        fence: Fence,
        worker: WorkerId,
    },
    /// An attempt failed or was lost; `retry_at_ms` is set when another attempt will follow.
    AttemptFailed {
        attempt: AttemptId,
        error: FailureRecord,
        retry_at_ms: Option<Millis>,
    },
    Succeeded {
        result: Value,
        resolution: Resolution,
    },
    Failed {
        error: FailureRecord,
        resolution: Resolution,
    },
    OutcomeUnknown {
        attempt: AttemptId,
        reason: String,
    },
    CancelRequested {
        by: Principal,
    },
    Canceled {
        by: Principal,
    },
    Reconciled {
        decision: Decision,
        by: Principal,
    },
    /// A worker tried to commit after losing its lease; recorded, not applied (unless it
    /// resolves an `unknown`: then the resolving event follows).
    LateOutcome {
        attempt: AttemptId,
        fence: Fence,
        worker: WorkerId,
        outcome: String,
        /// The late result (or failure), kept as evidence for reconciliation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<serde_json::Value>,
    },
}

impl EventKind {
    /// The event's type name, as stored.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Admitted { .. } => "admitted",
            Self::DispatchStarted { .. } => "dispatch_started",
            Self::AttemptFailed { .. } => "attempt_failed",
            Self::Succeeded { .. } => "succeeded",
            Self::Failed { .. } => "failed",
            Self::OutcomeUnknown { .. } => "outcome_unknown",
            Self::CancelRequested { .. } => "cancel_requested",
            Self::Canceled { .. } => "canceled",
            Self::Reconciled { .. } => "reconciled",
            Self::Approved { .. } => "approved",
            Self::LateOutcome { .. } => "late_outcome",
        }
    }

    /// Whether this event ends the invocation (nothing but late events can follow).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Succeeded { .. } | Self::Failed { .. } | Self::Canceled { .. })
    }
}
