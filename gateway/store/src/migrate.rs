//! Forward-only migrations from `migrations/<backend>/`, compiled into the binary (no sqlx
//! macros): each file's leading timestamp is its version.

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::SqlStr;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType};

type Files = &'static [(i64, &'static str, &'static str)];

pub(crate) const POSTGRES: Files = &[
    (20261130000001, "invocations", include_str!("../../../migrations/postgres/20261130000001_invocations.sql")),
    (20261130000002, "artifacts", include_str!("../../../migrations/postgres/20261130000002_artifacts.sql")),
    (
        20261130000003,
        "artifact_chunks",
        include_str!("../../../migrations/postgres/20261130000003_artifact_chunks.sql"),
    ),
    (
        20261130000004,
        "upstream_bindings",
        include_str!("../../../migrations/postgres/20261130000004_upstream_bindings.sql"),
    ),
    (20261130000005, "sealed_secrets", include_str!("../../../migrations/postgres/20261130000005_sealed_secrets.sql")),
    (20261130000006, "a2a_tasks", include_str!("../../../migrations/postgres/20261130000006_a2a_tasks.sql")),
    (20261201000007, "unknown_index", include_str!("../../../migrations/postgres/20261201000007_unknown_index.sql")),
    (20261201000008, "held_index", include_str!("../../../migrations/postgres/20261201000008_held_index.sql")),
    (20261201000009, "grants", include_str!("../../../migrations/postgres/20261201000009_grants.sql")),
    (
        20261201000010,
        "invocation_parent",
        include_str!("../../../migrations/postgres/20261201000010_invocation_parent.sql"),
    ),
    (20261202000011, "audit", include_str!("../../../migrations/postgres/20261202000011_audit.sql")),
    (
        20261202000012,
        "invocation_trace",
        include_str!("../../../migrations/postgres/20261202000012_invocation_trace.sql"),
    ),
    (
        20261203000013,
        "conformance_runs",
        include_str!("../../../migrations/postgres/20261203000013_conformance_runs.sql"),
    ),
    (20261203000014, "cheaper_rows", include_str!("../../../migrations/postgres/20261203000014_cheaper_rows.sql")),
    (20261204000015, "batched_writes", include_str!("../../../migrations/postgres/20261204000015_batched_writes.sql")),
    (
        20261205000016,
        "write_batch_generic_plan",
        include_str!("../../../migrations/postgres/20261205000016_write_batch_generic_plan.sql"),
    ),
    (20261207000017, "task_owner", include_str!("../../../migrations/postgres/20261207000017_task_owner.sql")),
];

pub(crate) const SQLITE: Files = &[
    (20261130000001, "invocations", include_str!("../../../migrations/sqlite/20261130000001_invocations.sql")),
    (20261130000002, "artifacts", include_str!("../../../migrations/sqlite/20261130000002_artifacts.sql")),
    (20261130000003, "artifact_chunks", include_str!("../../../migrations/sqlite/20261130000003_artifact_chunks.sql")),
    (
        20261130000004,
        "upstream_bindings",
        include_str!("../../../migrations/sqlite/20261130000004_upstream_bindings.sql"),
    ),
    (20261130000005, "sealed_secrets", include_str!("../../../migrations/sqlite/20261130000005_sealed_secrets.sql")),
    (20261130000006, "a2a_tasks", include_str!("../../../migrations/sqlite/20261130000006_a2a_tasks.sql")),
    (20261201000007, "unknown_index", include_str!("../../../migrations/sqlite/20261201000007_unknown_index.sql")),
    (20261201000008, "held_index", include_str!("../../../migrations/sqlite/20261201000008_held_index.sql")),
    (20261201000009, "grants", include_str!("../../../migrations/sqlite/20261201000009_grants.sql")),
    (
        20261201000010,
        "invocation_parent",
        include_str!("../../../migrations/sqlite/20261201000010_invocation_parent.sql"),
    ),
    (20261202000011, "audit", include_str!("../../../migrations/sqlite/20261202000011_audit.sql")),
    (
        20261202000012,
        "invocation_trace",
        include_str!("../../../migrations/sqlite/20261202000012_invocation_trace.sql"),
    ),
    (
        20261203000013,
        "conformance_runs",
        include_str!("../../../migrations/sqlite/20261203000013_conformance_runs.sql"),
    ),
    (20261207000017, "task_owner", include_str!("../../../migrations/sqlite/20261207000017_task_owner.sql")),
];

#[derive(Debug, Clone, Copy)]
pub(crate) struct Embedded(pub Files);

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async move {
            Ok(self
                .0
                .iter()
                .map(|(v, desc, sql)| {
                    Migration::new(*v, Cow::Borrowed(*desc), MigrationType::Simple, SqlStr::from_static(sql), false)
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file in `migrations/<backend>/` is compiled in, under its own version and name.
    #[test]
    fn every_migration_file_is_embedded() {
        for (dir, files) in [("postgres", POSTGRES), ("sqlite", SQLITE)] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(dir);
            let mut on_disk: Vec<String> = std::fs::read_dir(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".sql"))
                .collect();
            on_disk.sort();
            let embedded: Vec<String> = files.iter().map(|(v, name, _)| format!("{v}_{name}.sql")).collect();
            assert_eq!(embedded, on_disk, "migrations/{dir} and migrate.rs disagree");
        }
    }
}
