//! `switchyard-contract` is Switchyard's durable invocation model: typed IDs, principals and
//! targets, the invocation state machine ([`Invocation`], [`InvocationState`]), events, errors,
//! the ports (traits) that adapters and stores implement, and the [`Engine`] that drives them.
//!
//! Start reading at [`ports`] (what the outside world sees and provides), then [`state`] (every
//! transition and the guarantee it upholds), then [`engine`]. This crate knows no HTTP, no
//! protocol SDK and no database: stores persist what [`state`] decides.

pub mod artifact;
pub mod audit;
pub mod catalog;
pub mod digest;
pub mod engine;
pub mod error;
pub mod event;
pub mod id;
pub mod memory;
pub mod policy;
pub mod ports;
pub mod principal;
pub mod relay;
pub mod secret;
pub mod state;
pub mod tasks;

pub use artifact::{
    ArtifactError, ArtifactIndex, ArtifactKeeper, ArtifactMeta, ArtifactPage, ArtifactStore, BlobRef, ByteRange,
    ByteStream, ChunkSums, Commit, ContentDigest, Keep, NewArtifact, OpenedBlob, StagedBlob,
};
pub use audit::{AuditEntry, AuditKind, AuditLog, AuditRow, AuditStore, ChainHead, StoredCheckpoint};
pub use catalog::{Catalog, Content, NeedsInput, Operation, Part};
pub use digest::RequestDigest;
pub use engine::{Engine, EngineConfig, FaultHook, FaultPoint, NoFaults};
pub use error::{Error, ErrorKind, ErrorSource, FailureCode, FailureRecord, InvalidConfig};
pub use event::{Event, EventKind};
pub use id::{ArtifactId, AttemptId, EventId, InvocationId, WorkerId};
pub use policy::{AllowAll, CallFacts, GrantRecord, GrantStore, PolicyPoint, Ruling, Verdict};
pub use ports::{
    Admission, Binding, BindingStore, CancelAck, ChangeFeed, Changed, ClientGone, DispatchCall, FIRST_USE, Ingress,
    InvocationStore, Invocations, ListQuery, Page, RESOLVE_CLAIM, SecretVault, Submission, Submitted, Transition,
    Upstream, UpstreamError, UpstreamRegistry, Waited, client_stays,
};
pub use principal::{EffectClass, Grant, IngressKey, Principal, Target, TenantId};
pub use relay::{CallContext, CallRelay, Interim, Progress, Question, RelayError};
pub use secret::Secret;
pub use state::{Decision, Fence, Invocation, InvocationState, Lease, NewInvocation, Resolution, StateName};
pub use tasks::{
    ContextId, Delivery, NewDelivery, PushOutbox, RunCursor, TaskId, TaskQuery, TaskRecord, TaskScope, TaskStateName,
    TaskStore,
};

/// Milliseconds since the Unix epoch, as read from the store's clock.
pub type Millis = i64;

/// This process's clock, in [`Millis`]: for timestamps only (when a row was written). Leases,
/// claims and expiries are decided on the store's clock, never on this one.
pub fn wall_clock_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
