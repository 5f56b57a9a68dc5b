//! Store errors, and how they reach the contract: the database being away is `Unavailable`
//! (retry-safe: nothing was committed); a connection that broke while a statement was in flight
//! is `Unavailable` and not retry-safe (it may have committed: see [`answer_lost`]); a row that
//! does not decode is `Internal`.

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
            StoreError::Database(d) if lost_in_flight(d) => {
                tracing::error!(error = %e, "the store's answer was lost");
                Error::new(
                    switchyard_contract::ErrorKind::Unavailable,
                    switchyard_contract::ErrorSource::Gateway,
                    false,
                    format!("{LOST}: whether the change was committed is not known"),
                )
            }
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

/// Shorthand for store operations that answer in contract errors. A statement whose answer was
/// lost (the connection broke after it was sent) may have committed: that is never "nothing was
/// changed", but an [`answer_lost`] error, not retry-safe.
pub(crate) fn db(e: sqlx::Error) -> Error {
    StoreError::Database(e).into()
}

const LOST: &str = "the connection to the store broke before it answered";

/// Whether `e` is [`db`]'s error for a statement whose answer was lost.
pub(crate) fn answer_lost(e: &Error) -> bool {
    e.kind == switchyard_contract::ErrorKind::Unavailable && !e.retry_safe && e.message.starts_with(LOST)
}

/// Whether a failed statement may have reached the database: the connection broke while it was
/// in flight. A connection that was never made (refused, no socket, the pool timed out) sent
/// nothing.
fn lost_in_flight(e: &sqlx::Error) -> bool {
    use std::io::ErrorKind as K;
    match e {
        sqlx::Error::Io(io) => !matches!(io.kind(), K::ConnectionRefused | K::NotFound | K::AddrNotAvailable),
        sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_answer_is_never_retry_safe_and_a_refused_connection_is() {
        let io = |k| sqlx::Error::Io(std::io::Error::from(k));
        let lost = db(io(std::io::ErrorKind::UnexpectedEof));
        assert!(!lost.retry_safe && answer_lost(&lost), "{lost:?}");
        assert!(answer_lost(&db(sqlx::Error::Protocol("unexpected message".into()))));
        let refused = db(io(std::io::ErrorKind::ConnectionRefused));
        assert!(refused.retry_safe && !answer_lost(&refused), "{refused:?}");
        assert!(db(sqlx::Error::PoolTimedOut).retry_safe);
    }
}
