//! Store errors, and how they reach the contract: the database being away is `Unavailable`
//! (retry-safe: nothing was committed), a row that does not decode is `Internal`.

use switchyard_contract::Error;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored row does not decode: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Config(String),
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Database(sqlx::Error::RowNotFound) => Error::not_found("not found"),
            StoreError::Database(sqlx::Error::Database(db)) if db.message().contains("immutable") => {
                tracing::error!(error = %e, "refused by a store invariant");
                Error::conflict("refused: the invocation is terminal and immutable")
            }
            StoreError::Database(_) | StoreError::Migrate(_) => {
                tracing::error!(error = %e, "store unavailable");
                Error::unavailable("the gateway's store is unavailable; nothing was changed, retry later")
            }
            StoreError::Corrupt(_) | StoreError::Config(_) => {
                tracing::error!(error = %e, "store error");
                Error::internal("internal store error")
            }
        }
    }
}

/// Shorthand for store operations that answer in contract errors.
pub(crate) fn db(e: sqlx::Error) -> Error {
    StoreError::Database(e).into()
}
