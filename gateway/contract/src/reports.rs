//! Kept reports of protocol test-kit runs (`switchyard conformance`): what ran against what, and
//! its verdict, so past runs can be listed and compared.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Millis;
use crate::error::Error;

/// One finished run of a test kit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConformanceRun {
    /// `run_<32 hex>`.
    pub id: String,
    /// `mcp-server`, `mcp-client` or `a2a`.
    pub suite: String,
    /// What was tested (a URL or a command).
    pub target: String,
    pub started_ms: Millis,
    pub finished_ms: Millis,
    /// No scored failure, no difference between the legs, nothing against the baseline.
    pub passed: bool,
    /// The whole report, as written to `summary.json`.
    pub summary: Value,
}

/// Where runs are kept, shared by every replica.
#[async_trait]
pub trait ConformanceRuns: Send + Sync + std::fmt::Debug {
    /// Keeps a run; an id is recorded once.
    async fn record(&self, run: &ConformanceRun) -> Result<(), Error>;
    /// The newest `limit` runs, newest first.
    async fn list(&self, limit: u32) -> Result<Vec<ConformanceRun>, Error>;
    async fn get(&self, id: &str) -> Result<Option<ConformanceRun>, Error>;
}
