//! The audit log: every decision, approval step, grant mint or revocation and reconciliation
//! appended to a hash chain in the store, one chain per partition so replicas never queue on one
//! chain head ([`AuditWriter`]), bound together by Ed25519-signed checkpoints over every
//! partition's head ([`checkpoint`]), and checked end to end by [`verify`].
//!
//! A row's hash is the SHA-256 of the canonical JSON (RFC 8785) of every field but its sequence
//! number, the previous row's hash included ([`row_hash`]). So a changed row no longer matches
//! its hash; a removed row leaves a gap (or, renumbered, a broken link); two swapped rows each
//! name the other as their predecessor; and a cut-off tail falls short of the last checkpoint.

mod chain;
mod verify;
mod writer;

pub use chain::{CHECKPOINT_TYP, Checkpoint, GENESIS, checkpoint, row_hash, sign_heads};
pub use verify::{Finding, Problem, Report, Unsigned, verify};
pub use writer::AuditWriter;

/// A running gateway signs a checkpoint once the log has moved this many rows past the last one
/// (or every `checkpoint_interval_s`, whichever comes first), and once more at shutdown: a tail
/// cut off the log is then at most this long.
pub const CHECKPOINT_MAX_BEHIND: u64 = 1000;

#[cfg(test)]
mod tests;
