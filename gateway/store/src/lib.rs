//! `switchyard-store` implements the contract's store ports on PostgreSQL (production: many
//! gateway replicas share one database; row locks, `SKIP LOCKED`, the database clock) and SQLite
//! (the embedded default: one process, writes serialized through one connection).
//!
//! Start at [`connect`]. One module per entity (invocations, artifacts, bindings, secrets, tasks,
//! outbox) writes each statement once for both databases; [`dialect`] holds what genuinely
//! differs between them, and [`invocations_fast`] PostgreSQL's one-statement fast paths for the
//! hot path. SQL lives in `migrations/` (DDL) and in the entity modules (queries). Every store
//! runs the same contract test suites on both databases (`tests/` crate).

pub mod artifacts;
pub mod audit;
mod batch;
pub mod bindings;
pub mod dialect;
mod error;
pub mod feed;
pub mod grants;
pub mod group;
pub mod invocations;
pub mod invocations_fast;
mod migrate;
pub mod outbox;
pub mod reports;
mod row;
pub mod secrets;
pub mod tasks;

use std::sync::Arc;

use switchyard_contract::{
    ArtifactIndex, AuditStore, BindingStore, ChangeFeed, ConformanceRuns, GrantStore, InvocationStore, PushOutbox,
    SecretVault, TaskStore,
};

pub use artifacts::SqlArtifacts;
pub use audit::SqlAudit;
pub use bindings::SqlBindings;
pub use dialect::{Dialect, Pg, Pools, Sqlite};
pub use error::StoreError;
pub use feed::PgFeed;
pub use grants::SqlGrants;
pub use invocations::{PgStore, SqlInvocations, SqliteStore};
pub use outbox::SqlOutbox;
pub use reports::SqlConformanceRuns;
pub use secrets::SqlSecrets;
pub use tasks::SqlTasks;

/// Pool sizing and start-up behaviour.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Connections in the pool (PostgreSQL) or readers beside the single writer (SQLite).
    pub max_connections: u32,
    /// Apply pending migrations on connect.
    pub migrate: bool,
    /// PostgreSQL: how long a caller waits for a pooled connection before it gets `Unavailable`
    /// ("nothing changed"), so a database outage fails calls fast instead of stalling them.
    /// (SQLite is in-process: its single writer queues callers as long as sqlx allows.)
    pub acquire_timeout: std::time::Duration,
    /// PostgreSQL: announce and hear changes across replicas (`LISTEN/NOTIFY`, [`PgFeed`]).
    pub change_feed: bool,
    /// SQLite: invocation admissions and transitions, audit entries and A2A task writes share
    /// commits ([`group`]'s write pipeline).
    pub group_commit: bool,
    /// Crash tests only: the writer (SQLite's group commit, PostgreSQL's batched statements)
    /// stops forever before committing the first batch of at least [`group::PAUSE_AT_CHANGES`]
    /// changes after [`group::PAUSE_AFTER_CHANGES`], so the process can be killed with a shared
    /// commit in flight.
    pub pause_before_shared_commit: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            migrate: true,
            acquire_timeout: std::time::Duration::from_secs(2),
            change_feed: true,
            group_commit: true,
            pause_before_shared_commit: false,
        }
    }
}

/// Both stores on one database: invocations and the artifact index share its connections.
#[derive(Clone)]
pub struct Stores {
    pub invocations: Arc<dyn InvocationStore>,
    pub artifacts: Arc<dyn ArtifactIndex>,
    /// Pinned upstream definitions (MCP tool schemas).
    pub bindings: Arc<dyn BindingStore>,
    /// Sealed secrets (upstream OAuth tokens, encrypted by the gateway).
    pub vault: Arc<dyn SecretVault>,
    /// Agent tasks (A2A), their events and push configurations.
    pub tasks: Arc<dyn TaskStore>,
    /// The push deliveries those tasks queue.
    pub outbox: Arc<dyn PushOutbox>,
    /// The policy enforcement point's minted grants and revocations.
    pub grants: Arc<dyn GrantStore>,
    /// The audit log's hash chains and signed checkpoints.
    pub audit: Arc<dyn AuditStore>,
    /// Kept runs of the protocol test kits (`switchyard conformance`).
    pub conformance: Arc<dyn ConformanceRuns>,
    /// PostgreSQL: other replicas' changes, heard as they commit (`LISTEN/NOTIFY`). SQLite has
    /// one process, whose changes the engine hears in memory.
    pub feed: Option<Arc<dyn ChangeFeed>>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

/// Opens the database named by `url` (`postgres://…` or `sqlite:…`) once, migrating it if
/// asked, and builds every store on the same connections (on SQLite: one writer per process).
pub async fn connect(url: &str, opts: &StoreOptions) -> Result<Stores, StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let pools = Pools::<Pg>::connect(url, opts).await?;
        let feed = opts.change_feed.then(|| Arc::new(PgFeed::new(pools.pool().clone())) as Arc<dyn ChangeFeed>);
        Ok(Stores { feed, ..stores(pools, opts) })
    } else if url.starts_with("sqlite:") {
        Ok(stores(Pools::<Sqlite>::connect(url, opts).await?, opts))
    } else {
        Err(StoreError::Config(format!("store url must start with postgres:// or sqlite: (got `{}`)", redact_url(url))))
    }
}

fn stores<D: Dialect>(pools: Pools<D>, opts: &StoreOptions) -> Stores {
    let mut invocations = SqlInvocations::new(pools.clone());
    if !opts.group_commit {
        invocations.group = None;
    } else if opts.pause_before_shared_commit
        && let Some(group) = &mut invocations.group
    {
        *group = Arc::new(group::GroupCommit::pausing(pools.clone()));
    }
    if opts.pause_before_shared_commit
        && let Some(batch) = &mut invocations.batch
    {
        *batch = Arc::new(batch::Batcher::pausing(pools.clone()));
    }
    let audit = SqlAudit::sharing(pools.clone(), invocations.group.clone());
    let tasks = SqlTasks::sharing(pools.clone(), invocations.group.clone());
    Stores {
        invocations: Arc::new(invocations),
        artifacts: Arc::new(SqlArtifacts::new(pools.clone())),
        bindings: Arc::new(SqlBindings::new(pools.clone())),
        vault: Arc::new(SqlSecrets::new(pools.clone())),
        tasks: Arc::new(tasks),
        outbox: Arc::new(SqlOutbox::new(pools.clone())),
        grants: Arc::new(SqlGrants::new(pools.clone())),
        conformance: Arc::new(SqlConformanceRuns::new(pools)),
        audit: Arc::new(audit),
        feed: None,
    }
}

/// The URL with any password replaced, for logs and messages.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact_url("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact_url("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}
