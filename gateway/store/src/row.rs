//! Encoding helpers every entity module shares: JSON in and out of text columns, counters in and
//! out of `BIGINT`, and what a row that does not decode is.

use serde::Serialize;
use serde::de::DeserializeOwned;
use switchyard_contract::Error;

use crate::error::StoreError;

/// A stored row that does not decode: `Internal`, not an outage.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> Error {
    StoreError::Corrupt(what.to_string()).into()
}

/// A stored JSON document (`what` names it in the error).
pub(crate) fn parse_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("{what}: {e}")))
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String, Error> {
    serde_json::to_string(v).map_err(|e| corrupt(format!("cannot encode: {e}")))
}

/// A counter as stored (`BIGINT`).
pub(crate) fn i64_of(v: u64) -> Result<i64, Error> {
    i64::try_from(v).map_err(|_| corrupt("counter overflow"))
}

/// A stored counter, which is never negative.
pub(crate) fn u64_of(v: i64, what: &str) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| corrupt(format!("{what} is negative")))
}
