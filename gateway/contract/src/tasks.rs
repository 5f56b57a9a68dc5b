//! The task port: durable, protocol-neutral task rows for agent faces (A2A). A task is a JSON
//! document (`body`) with the columns queries filter on, an ordered event log, push
//! configurations and a push delivery outbox ([`PushOutbox`], its own port: written with the
//! task, read by the delivery loop). Every change of a task is a compare-and-set on
//! `version`, and `version` equals the sequence number of the task's newest event, so readers
//! on any replica can follow a task from any point with [`TaskStore::events_after`]. Reads by
//! id are scoped by tenant and owner (`scope`); the event, push and outbox methods take ids the caller
//! got from a scoped read.

use async_trait::async_trait;
use serde_json::Value;

use crate::error::Error;
use crate::id::InvocationId;
use crate::principal::{Principal, TenantId};

/// A string id of the task model, distinct in type from every other string.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

string_id!(
    /// A task's id: minted by the gateway for a new task (or taken from the upstream agent that
    /// owns the task), and echoed by clients to continue, read, cancel or subscribe to it.
    TaskId
);
impl TaskId {
    /// A short, stable key for wake-ups across replicas (64-bit FNV-1a of the id): a change
    /// notice names the task by it, whatever its id's length or characters. Two ids with one key
    /// only wake each other's followers for nothing.
    pub fn bell_key(&self) -> u64 {
        self.0.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    }
}

string_id!(
    /// The id of a conversation (context) that tasks and messages belong to.
    ContextId
);

/// A task's state as the task rows keep it, and as listings filter on it. Stored under the A2A
/// names (`TASK_STATE_WORKING`, …): the protocol the rows were first written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskStateName {
    Unspecified,
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
}

impl TaskStateName {
    const ALL: [TaskStateName; 9] = [
        Self::Unspecified,
        Self::Submitted,
        Self::Working,
        Self::InputRequired,
        Self::AuthRequired,
        Self::Completed,
        Self::Canceled,
        Self::Failed,
        Self::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "TASK_STATE_UNSPECIFIED",
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::Failed => "TASK_STATE_FAILED",
            Self::Rejected => "TASK_STATE_REJECTED",
        }
    }

    /// From the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|n| n.as_str() == s)
    }
}

/// How far a run got in writing its task: the invocation driving it and the last step it
/// applied. A run driven again (after a crash) skips the steps its cursor says are applied.
/// Stored as `<invocation>:<step>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunCursor {
    pub invocation: InvocationId,
    pub step: u32,
}

impl RunCursor {
    /// From the stored form; `None` for none (an empty column) or a malformed one.
    pub fn parse(s: &str) -> Option<Self> {
        let (invocation, step) = s.rsplit_once(':')?;
        Some(Self { invocation: invocation.parse().ok()?, step: step.parse().ok()? })
    }
}

impl std::fmt::Display for RunCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.invocation, self.step)
    }
}

/// Whose tasks these are: the caller's tenant, the space inside it that an A2A request names
/// (its `tenant` field or `/{tenant}/…` path segment; empty for none) and the subject that owns
/// them. Built only from a principal — so a task read or written under it is never another
/// tenant's, nor another subject's unless the scope is [tenant-wide](Self::tenant_wide) — or read
/// back from a row the store wrote. The tenant and space are stored as `<tenant>/<space>` (a
/// tenant name has no `/`), the owner in a column of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskScope {
    tenant: TenantId,
    space: String,
    /// The subject whose tasks these are (a new task is created as theirs).
    owner: String,
    /// Reads see every subject's tasks of the tenant and space (the `tasks:admin` scope).
    all_subjects: bool,
}

impl TaskScope {
    /// The scope of `principal`'s own tasks in `space`.
    pub fn of(principal: &Principal, space: &str) -> Self {
        Self {
            tenant: principal.tenant.clone(),
            space: space.to_string(),
            owner: principal.subject.clone(),
            all_subjects: false,
        }
    }

    /// Every subject's tasks of `principal`'s tenant in `space` (new tasks are still
    /// `principal`'s): for a caller holding [`TASKS_ADMIN`](crate::TASKS_ADMIN).
    pub fn tenant_wide(principal: &Principal, space: &str) -> Self {
        Self { all_subjects: true, ..Self::of(principal, space) }
    }

    /// The same scope reading only its owner's tasks (what a new task's run needs, whatever
    /// the breadth of the credential that sent it).
    pub fn own(&self) -> Self {
        Self { all_subjects: false, ..self.clone() }
    }

    /// The scope of a stored row: its `<tenant>/<space>` key and its owner.
    pub fn stored(key: &str, owner: &str) -> Result<Self, Error> {
        let (tenant, space) =
            key.split_once('/').ok_or_else(|| Error::internal(format!("task scope `{key}` has no tenant")))?;
        Ok(Self {
            tenant: TenantId::new(tenant)?,
            space: space.to_string(),
            owner: owner.to_string(),
            all_subjects: false,
        })
    }

    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The subject whose tasks these are.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Whether reads see every subject's tasks (else only the owner's).
    pub fn is_tenant_wide(&self) -> bool {
        self.all_subjects
    }

    /// Whether a task stored under `row` is visible in this scope: same tenant and space, and
    /// the same owner unless this scope is tenant-wide.
    pub fn covers(&self, row: &TaskScope) -> bool {
        self.tenant == row.tenant && self.space == row.space && (self.all_subjects || self.owner == row.owner)
    }

    /// The stored form of tenant and space, `<tenant>/<space>`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.tenant, self.space)
    }

    /// What names the owner's messages apart from everyone else's: the key and the owner
    /// (message ids are the sender's, so two subjects may use the same one).
    pub fn identity(&self) -> String {
        format!("{}\0{}", self.key(), self.owner)
    }
}

impl std::fmt::Display for TaskScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.tenant, self.space)
    }
}

/// The stored form inside a run's request: `{"key", "owner", "all"}`. A bare `<tenant>/<space>`
/// string (written before tasks had owners) reads as tenant-wide, as such a run was.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum StoredScope {
    Owned {
        key: String,
        owner: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        all: bool,
    },
    Legacy(String),
}

impl serde::Serialize for TaskScope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StoredScope::Owned { key: self.key(), owner: self.owner.clone(), all: self.all_subjects }.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for TaskScope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let scope = match StoredScope::deserialize(d)? {
            StoredScope::Owned { key, owner, all } => {
                Self::stored(&key, &owner).map(|s| Self { all_subjects: all, ..s })
            }
            StoredScope::Legacy(key) => Self::stored(&key, "").map(|s| Self { all_subjects: true, ..s }),
        };
        scope.map_err(serde::de::Error::custom)
    }
}

/// One task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: TaskId,
    /// Whose task it is: reads by id and listings are filtered by it.
    pub scope: TaskScope,
    /// The agent (face) the task belongs to.
    pub agent: String,
    pub context_id: ContextId,
    pub state: TaskStateName,
    /// When the current status was set (ms since the epoch).
    pub status_ms: i64,
    /// Sequence number of the newest event.
    pub version: i64,
    /// The run that last wrote the task, and how far it got.
    pub run_cursor: Option<RunCursor>,
    pub body: Value,
}

/// A filter for [`TaskStore::list`], newest status first, keyset-paginated.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskQuery {
    pub scope: TaskScope,
    pub agent: String,
    pub context_id: Option<ContextId>,
    pub state: Option<TaskStateName>,
    pub status_after_ms: Option<i64>,
    /// Keyset cursor: rows strictly after `(status_ms, id)` in `(status_ms DESC, id DESC)` order.
    pub after: Option<(i64, TaskId)>,
    pub limit: u32,
}

/// A push delivery to make: the configuration (as JSON) and the payload to POST.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDelivery {
    pub config_id: String,
    pub config: Value,
    pub payload: Value,
}

/// A push delivery waiting in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub id: i64,
    pub task_id: TaskId,
    pub config_id: String,
    pub config: Value,
    pub payload: Value,
    pub attempts: i32,
}

#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Inserts `task` (its `version` must equal `events.len()`) with its first events.
    /// `Ok(false)`: a task with that id already exists; nothing was written.
    async fn create(&self, task: &TaskRecord, events: &[Value]) -> Result<bool, Error>;
    /// [`create`](Self::create), only while attempt `attempt` is invocation `run`'s current one
    /// and its lease is live on the store's clock: the fenced mutex a send takes before it goes
    /// out (a proxied first message's sent marker). `Ok(false)`: the attempt was taken over (its
    /// lease ran out and another worker moved the call on), or the id exists — do not send.
    async fn create_fenced(
        &self,
        task: &TaskRecord,
        events: &[Value],
        run: InvocationId,
        attempt: crate::id::AttemptId,
    ) -> Result<bool, Error>;
    /// The task `id` if it exists in `scope`.
    async fn get(&self, scope: &TaskScope, id: &TaskId) -> Result<Option<TaskRecord>, Error>;
    /// Replaces the task if its stored version is still `expected_version`, appending `events`
    /// (numbered from `expected_version + 1`; `task.version` must be the last) and queueing
    /// `deliveries`, all in one transaction. `Ok(false)`: the version moved; nothing written.
    async fn update(
        &self,
        task: &TaskRecord,
        expected_version: i64,
        events: &[Value],
        deliveries: &[NewDelivery],
    ) -> Result<bool, Error>;
    /// The version (its last event's sequence number) of each of `ids` that exists: one read
    /// for many tasks, the task hub's sweep for changes it was not told about.
    async fn versions(&self, ids: &[TaskId]) -> Result<Vec<(TaskId, i64)>, Error>;
    /// Events of task `id` with a sequence number above `after`, in order (at most `limit`).
    async fn events_after(&self, id: &TaskId, after: i64, limit: u32) -> Result<Vec<(i64, Value)>, Error>;
    /// One page of tasks and the total number matching the filter (cursor ignored).
    async fn list(&self, query: &TaskQuery) -> Result<(Vec<TaskRecord>, i64), Error>;

    /// Creates or replaces push configuration `id` of task `task_id`.
    async fn put_push_config(&self, task_id: &TaskId, id: &str, config: &Value) -> Result<(), Error>;
    /// Push configurations of a task, oldest first.
    async fn push_configs(&self, task_id: &TaskId) -> Result<Vec<(String, Value)>, Error>;
    /// Deletes one; `Ok(false)` if it did not exist.
    async fn delete_push_config(&self, task_id: &TaskId, id: &str) -> Result<bool, Error>;
}

/// The push delivery outbox: deliveries are queued by [`TaskStore::update`] in the same
/// transaction as the task change they report, and taken from here by the delivery loop.
#[async_trait]
pub trait PushOutbox: Send + Sync {
    /// Claims deliveries that are due on the store's clock, for `lease_ms` from now (another
    /// replica does not take them meanwhile; an unfinished claim falls due again after it),
    /// oldest first, at most `limit`: only the oldest pending delivery of each (task, config), so
    /// each webhook receives its task's events in order. Every time in the outbox is the store's.
    async fn claim_deliveries(&self, lease_ms: i64, limit: u32) -> Result<Vec<Delivery>, Error>;
    /// Marks a delivery done (acknowledged, or given up after the last attempt).
    async fn finish_delivery(&self, id: i64, error: Option<&str>) -> Result<(), Error>;
    /// Records a failed attempt; it falls due again `backoff_ms` from now.
    async fn retry_delivery(&self, id: i64, backoff_ms: i64, error: &str) -> Result<(), Error>;
    /// How many deliveries wait (not yet acknowledged or given up), on every replica.
    async fn pending_deliveries(&self) -> Result<u64, Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal::new(TenantId::new("red").unwrap(), "alice")
    }

    #[test]
    fn a_scope_reads_its_owners_tasks_and_a_tenant_wide_one_every_subjects() {
        let row = TaskScope::stored("red/", "bob").unwrap();
        assert!(!TaskScope::of(&alice(), "").covers(&row), "bob's task is not alice's");
        assert!(TaskScope::tenant_wide(&alice(), "").covers(&row), "tasks:admin reads it");
        assert!(!TaskScope::tenant_wide(&alice(), "space").covers(&row), "another space");
        let blue = TaskScope::stored("blue/", "alice").unwrap();
        assert!(!TaskScope::tenant_wide(&alice(), "").covers(&blue), "never another tenant");
    }

    #[test]
    fn a_scope_round_trips_and_a_stored_bare_key_reads_as_tenant_wide() {
        let wide = TaskScope::tenant_wide(&alice(), "s");
        let json = serde_json::to_value(&wide).unwrap();
        assert_eq!(json, serde_json::json!({"key": "red/s", "owner": "alice", "all": true}));
        assert_eq!(serde_json::from_value::<TaskScope>(json).unwrap(), wide);
        let legacy: TaskScope = serde_json::from_value(serde_json::json!("red/s")).unwrap();
        assert_eq!((legacy.owner(), legacy.is_tenant_wide(), legacy.key().as_str()), ("", true, "red/s"));
    }
}
