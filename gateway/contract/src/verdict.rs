//! The small terms an invocation's record, its events and the audit log share: the lease's
//! fencing token, how an outcome was reached, an operator's verdict, why a call was held.
//! (`crate::state` re-exports them.)

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::principal::Principal;

/// A fencing token: grows by one each time a worker takes an invocation's lease. A write is
/// accepted only with the current token, so a worker whose lease was taken over cannot commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fence(pub u64);

/// How a terminal outcome was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Resolution {
    /// The upstream's reply (or the gateway's retry policy) decided it.
    Upstream,
    /// An operator reconciled an `unknown` outcome.
    Reconciled { principal: Principal },
    /// An approver denied a held call.
    Denied { principal: Principal },
    /// The policy enforcement point decided: no approval came in time.
    Expired,
    /// The policy enforcement point refused an approved call at its dispatch.
    Policy,
}

/// An operator's verdict on an `unknown` invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// The effect happened upstream; `result` becomes the invocation's result.
    Applied { result: Value },
    /// The effect did not happen; the invocation fails with `message`.
    NotApplied { message: String },
}

/// Why a call waits for approval, as the policy enforcement point said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// Said to the caller and the approver.
    pub reason: String,
    /// What decided it (policy version, rule).
    pub basis: String,
}
