//! The test harness: throw-away PostgreSQL clusters started from the installed server binaries,
//! fresh SQLite files, a real S3-compatible server ([`s3::S3Server`], s3s-fs on `127.0.0.1:0`),
//! and the real `switchyard` binary started on `127.0.0.1:0`.
//!
//! Start at [`pg::database`] (a fresh PostgreSQL database) and [`gateway::Gateway`] (a running
//! gateway process with helpers to call its admin API).

pub mod a2a;
pub mod bench;
pub mod fault_proxy;
pub mod gateway;
pub mod guarantees;
pub mod issuer;
pub mod mcp;
pub mod node;
pub mod otlp;
pub mod pg;
pub mod s3;
pub mod stores;
pub mod tenants;
pub mod tls;
pub mod upstream;

/// A fresh SQLite database URL in its own temporary directory (kept alive by the guard).
pub fn sqlite_url() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
    let url = format!("sqlite://{}/switchyard.db", dir.path().display());
    (dir, url)
}
