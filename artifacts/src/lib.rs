//! `switchyard-artifacts`: the artifact store. Terminal results of invocations (A2A artifacts,
//! MCP binary content, large outputs) are kept as content-addressed bytes — on the filesystem
//! ([`FsStore`], the embedded default) or in an S3-compatible bucket ([`S3Store`]) — with their
//! metadata in the invocation store (`switchyard-store`'s `ArtifactIndex` implementations).
//!
//! Start at [`Artifacts`]: [`Artifacts::put`] streams a body in constant memory, hashing it on
//! the way, and commits its row (identical bytes are stored once); [`Artifacts::open`] serves
//! bytes only after they verify; [`Artifacts::collect_garbage`] applies retention. The ports
//! and the collector's multi-replica protocol are in `switchyard_contract::artifact`.

mod chunks;
pub mod config;
pub mod fs;
pub mod s3;
mod service;
mod verify;

pub use chunks::CHUNK_SIZE;
pub use config::{ArtifactsConfig, Backend};
pub use fs::FsStore;
pub use s3::{S3Settings, S3Store};
pub use service::{Artifacts, Download, GcReport, Policy, PutRequest, RangeSpec, VERIFY_RANGES_UP_TO};
pub use verify::corrupt_reads;

impl ArtifactsConfig {
    /// The service policy for this configuration.
    pub fn policy(&self) -> Policy {
        Policy {
            retention: self.retention_policy(),
            default_class: self.default_retention_class.clone(),
            gc_grace_ms: self.gc_grace_ms,
        }
    }
}
