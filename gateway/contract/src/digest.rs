//! The canonical request digest: SHA-256 over the RFC 8785 (JCS) form of the target and request,
//! so that two requests equal as JSON values have the same digest whatever their key order or
//! number spelling.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;

/// `sha256:<64 hex digits>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestDigest(String);

impl RequestDigest {
    /// Digest of `{"operation":…, "request":…, "upstream":…}` in canonical form.
    pub fn compute(upstream: &str, operation: &str, request: &serde_json::Value) -> Result<Self, Error> {
        let doc = serde_json::json!({ "upstream": upstream, "operation": operation, "request": request });
        let canonical = serde_json_canonicalizer::to_vec(&doc)
            .map_err(|e| Error::invalid_input(format!("request cannot be canonicalized: {e}")))?;
        Ok(Self(format!("sha256:{}", hex::encode(Sha256::digest(&canonical)))))
    }

    /// Wraps a digest read back from the store.
    pub fn from_stored(s: String) -> Self {
        Self(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(v: serde_json::Value) -> String {
        RequestDigest::compute("u", "op", &v).map(|d| d.0).unwrap_or_default()
    }

    #[test]
    fn key_order_and_number_spelling_do_not_matter() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1.0,"a":[1e2,"x"]}"#).unwrap_or_default();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":[100,"x"],"b":1}"#).unwrap_or_default();
        assert_eq!(d(a), d(b));
        assert_ne!(d(json!({"a":1})), d(json!({"a":2})));
        assert!(d(json!({})).starts_with("sha256:"));
        assert_eq!(d(json!({})).len(), 7 + 64);
    }

    #[test]
    fn target_is_part_of_the_digest() {
        let r = json!({"x":1});
        let a = RequestDigest::compute("u", "op", &r).ok();
        let b = RequestDigest::compute("u", "other", &r).ok();
        assert!(a.is_some() && a != b);
    }
}
