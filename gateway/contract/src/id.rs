//! Typed, prefixed identifiers. Each displays as `<prefix>_<32 hex digits>` (a UUIDv7, so IDs
//! sort by creation time) and parses back only with its own prefix.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// Why a string is not an ID of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a valid {kind} id (expected `{prefix}_` followed by 32 hex digits)")]
pub struct ParseIdError {
    kind: &'static str,
    prefix: &'static str,
    input: String,
}

macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            /// The prefix this kind of ID carries on the wire.
            pub const PREFIX: &'static str = $prefix;

            /// A fresh, time-ordered ID.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// The underlying UUID.
            pub fn uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}_{}", $prefix, self.0.simple())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }

        impl FromStr for $name {
            type Err = ParseIdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let err = || ParseIdError { kind: $kind, prefix: $prefix, input: s.chars().take(80).collect() };
                let hex = s
                    .strip_prefix($prefix)
                    .and_then(|rest| rest.strip_prefix('_'))
                    .ok_or_else(err)?;
                if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(err());
                }
                Uuid::try_parse(hex).map(Self).map_err(|_| err())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

prefixed_id!(
    /// One durable invocation: a call admitted by the gateway.
    InvocationId, "inv", "invocation"
);
prefixed_id!(
    /// One physical attempt to dispatch an invocation upstream.
    AttemptId, "att", "attempt"
);
prefixed_id!(
    /// One event in an invocation's journal.
    EventId, "evt", "event"
);
prefixed_id!(
    /// One engine instance (a gateway process); owns leases.
    WorkerId, "wrk", "worker"
);
prefixed_id!(
    /// One stored artifact: bytes an invocation produced, with its metadata.
    ArtifactId, "art", "artifact"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_reject_other_prefixes() {
        let id = InvocationId::new();
        let text = id.to_string();
        assert!(text.starts_with("inv_") && text.len() == 36, "{text}");
        assert_eq!(text.parse::<InvocationId>(), Ok(id));
        assert!(text.replacen("inv", "att", 1).parse::<InvocationId>().is_err());
        assert!("inv_xyz".parse::<InvocationId>().is_err());
        assert!("inv_".parse::<InvocationId>().is_err());
        let json = serde_json::to_string(&id).unwrap_or_default();
        assert_eq!(json, format!("\"{text}\""));
    }

    #[test]
    fn ids_sort_by_creation() {
        let a = InvocationId::new();
        let b = InvocationId::new();
        assert!(a < b);
        assert!(a.to_string() < b.to_string());
    }
}
