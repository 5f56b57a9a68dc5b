//! Secrets in configuration: never printed, compared in constant time.

use serde::{Deserialize, Serialize};

/// A secret string (a token, a password, a URL with credentials). `Debug` shows `***` (or `""`
/// when empty, so a missing secret is visible); serialization is the plain string.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "\"***\"" })
    }
}

impl Secret {
    /// Whether `presented` equals the secret, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        constant_time_eq(presented.as_bytes(), self.0.as_bytes())
    }
}

/// Byte equality in time that depends only on the lengths, for comparing credentials.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print_and_compare_exactly() {
        let s = Secret("hunter2-long-enough".into());
        assert_eq!(format!("{s:?}"), "\"***\"");
        assert_eq!(format!("{:?}", Secret::default()), "\"\"");
        assert!(s.matches("hunter2-long-enough"));
        assert!(!s.matches("hunter2-long-enougH") && !s.matches("hunter2") && !s.matches(""));
    }
}
