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
];

pub(crate) const SQLITE: Files = &[
    (20261130000001, "invocations", include_str!("../../../migrations/sqlite/20261130000001_invocations.sql")),
    (20261130000002, "artifacts", include_str!("../../../migrations/sqlite/20261130000002_artifacts.sql")),
    (20261130000003, "artifact_chunks", include_str!("../../../migrations/sqlite/20261130000003_artifact_chunks.sql")),
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
