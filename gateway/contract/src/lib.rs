//! `switchyard-contract` is Switchyard's durable invocation model: typed IDs, principals and
//! targets, the invocation state machine ([`Invocation`], [`InvocationState`]), events, errors,
//! the ports (traits) that adapters and stores implement, and the [`Engine`] that drives them.
//!
//! Start reading at [`ports`] (what the outside world sees and provides), then [`state`] (every
//! transition and the guarantee it upholds), then [`engine`]. This crate knows no HTTP, no
//! protocol SDK and no database: stores persist what [`state`] decides.

pub mod artifact;
pub mod artifact_link;
pub mod audit;
pub mod bells;
pub mod catalog;
pub mod digest;
pub mod engine;
pub mod error;
pub mod event;
pub mod id;
// Only for tests (this crate's, and others' through the `test-util` feature): not in the binary.
#[cfg(any(test, feature = "test-util"))]
pub mod memory;
pub mod meter;
pub mod policy;
pub mod ports;
pub mod principal;
pub mod relay;
pub mod reports;
pub mod secret;
pub mod state;
pub mod tasks;
pub mod trace;
pub mod verdict;

pub use artifact::{
    ArtifactError, ArtifactIndex, ArtifactKeeper, ArtifactMeta, ArtifactPage, ArtifactStore, BlobRef, ByteRange,
    ByteStream, ChunkSums, Commit, ContentDigest, Keep, NewArtifact, OpenedBlob, StagedBlob,
};
pub use artifact_link::ArtifactLinks;
pub use audit::{AuditEntry, AuditKind, AuditLog, AuditRow, AuditStore, ChainHead, StoredCheckpoint};
pub use catalog::{Catalog, Content, NeedsInput, Operation, Part, TaskRun};
pub use digest::RequestDigest;
pub use engine::{Engine, EngineConfig, FaultHook, FaultPoint, NoFaults};
pub use error::{Error, ErrorKind, ErrorSource, FailureCode, FailureRecord, InvalidConfig};
pub use event::{Event, EventKind};
pub use id::{ArtifactId, AttemptId, EventId, InvocationId, WorkerId};
pub use meter::Meter;
pub use policy::{AllowAll, ApprovalGrant, CallFacts, GrantRecord, GrantStore, PolicyPoint, Ruling, Verdict};
pub use ports::{
    Admission, Binding, BindingStore, CancelAck, ChangeFeed, Changed, ClientGone, DispatchCall, FIRST_USE, Ingress,
    InvocationStore, Invocations, ListQuery, Page, Passage, RESOLVE_CLAIM, SecretVault, Submission, Submitted,
    Transition, Upstream, UpstreamError, UpstreamRegistry, Waited, client_stays,
};
pub use principal::{EffectClass, Grant, IngressKey, Principal, TASKS_ADMIN, Target, TenantId};
pub use relay::{CallContext, CallRelay, Interim, Progress, Question, RelayError};
pub use reports::{ConformanceRun, ConformanceRuns};
pub use secret::Secret;
pub use state::{Decision, Fence, Invocation, InvocationState, Lease, NewInvocation, Resolution, StateName};
pub use tasks::{
    ContextId, Delivery, NewDelivery, PushOutbox, RunCursor, TaskId, TaskQuery, TaskRecord, TaskScope, TaskStateName,
    TaskStore,
};
pub use trace::TraceParent;

/// Milliseconds since the Unix epoch, as read from the store's clock.
pub type Millis = i64;

/// Milliseconds since the epoch as ISO 8601 UTC (`2026-11-30T07:00:00.000Z`).
pub fn iso8601(ms: Millis) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

/// This process's clock, in [`Millis`]: for timestamps only (when a row was written). Leases,
/// claims and expiries are decided on the store's clock, never on this one.
pub fn wall_clock_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod clock_tests {
    #[test]
    fn iso_timestamps() {
        assert_eq!(super::iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::iso8601(1_796_021_220_817), "2026-11-30T06:47:00.817Z");
        assert_eq!(super::iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
