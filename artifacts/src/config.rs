//! The `[artifacts]` configuration section: which store, its limits, retention classes and the
//! collector. Flat keys, so every one can be set from the environment
//! (`SWITCHYARD__ARTIFACTS__S3_BUCKET=…`); S3 credentials fall back to `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use switchyard_contract::{ArtifactError, ArtifactStore, Keep, Secret};

use crate::fs::FsStore;
use crate::s3::{S3Settings, S3Store};

/// `fs` (default) or `s3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Fs,
    S3,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ArtifactsConfig {
    /// Where artifact bytes live: `fs` (a local directory, `dir`) or `s3` (a bucket of an
    /// S3-compatible store).
    pub backend: Backend,
    /// `fs`: the directory (default `<server.data_dir>/artifacts`).
    pub dir: Option<PathBuf>,
    /// `s3`: endpoint URL; empty means AWS for `s3_region`.
    pub s3_endpoint: String,
    /// `s3`: the region.
    pub s3_region: String,
    /// `s3`: the bucket; required (at least 3 characters) when `backend` is `s3`.
    pub s3_bucket: String,
    /// `s3`: prepended to every object key, e.g. `switchyard/`.
    pub s3_prefix: String,
    /// Path-style URLs (most self-hosted servers need them).
    pub s3_path_style: bool,
    /// Create the bucket at start if it is missing.
    pub s3_create_bucket: bool,
    /// `s3`: the access key id. Empty: the credentials come from `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    pub s3_access_key_id: String,
    /// `s3`: the secret access key that goes with `s3_access_key_id`.
    pub s3_secret_access_key: Secret,
    /// Multipart part size (≥ 5 MiB); also the largest body sent in one `PutObject`.
    pub part_size_bytes: usize,
    /// Parts in flight per upload. Upload memory ≈ (this + 1) × part size.
    pub upload_concurrency: usize,
    /// Collector period; 0 turns the background collector off (`switchyard artifacts gc` still works).
    pub gc_interval_ms: u64,
    /// Unreferenced bytes and staging leftovers younger than this are kept (covers uploads
    /// between writing bytes and committing their row).
    pub gc_grace_ms: u64,
    /// Retention class → `forever` or a number of days (`"30d"`).
    pub retention: BTreeMap<String, String>,
    /// The class used when a producer names none.
    pub default_retention_class: String,
    /// Signs the short-lived links to an artifact that faces hand its caller (`?grant=…`);
    /// replicas need the same one. Empty: `<server.data_dir>/artifact-link-key`, generated once.
    pub link_key: Secret,
}

impl Default for ArtifactsConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Fs,
            dir: None,
            s3_endpoint: String::new(),
            s3_region: "us-east-1".into(),
            s3_bucket: String::new(),
            s3_prefix: String::new(),
            s3_path_style: false,
            s3_create_bucket: false,
            s3_access_key_id: String::new(),
            s3_secret_access_key: Secret::default(),
            part_size_bytes: 8 * 1024 * 1024,
            upload_concurrency: 4,
            gc_interval_ms: 600_000,
            gc_grace_ms: 3_600_000,
            retention: BTreeMap::from([("default".into(), "forever".into())]),
            default_retention_class: "default".into(),
            link_key: Secret::default(),
        }
    }
}

/// Parses `forever` or `<N>d`.
pub fn parse_keep(text: &str) -> Option<Keep> {
    if text == "forever" {
        return Some(Keep::Forever);
    }
    let days: u64 = text.strip_suffix('d')?.parse().ok()?;
    (days >= 1).then(|| Keep::ForMs(days.saturating_mul(86_400_000)))
}

impl ArtifactsConfig {
    /// Checks what types cannot; messages name the key (`artifacts.…`).
    pub fn validate(&self) -> Result<(), switchyard_contract::InvalidConfig> {
        for (class, keep) in &self.retention {
            if parse_keep(keep).is_none() {
                return Err(format!("artifacts.retention.{class} must be `forever` or `<days>d` (got `{keep}`)").into());
            }
        }
        if !self.retention.contains_key(&self.default_retention_class) {
            return Err(format!(
                "artifacts.default_retention_class `{}` is not a key of artifacts.retention",
                self.default_retention_class
            )
            .into());
        }
        if !(5 * 1024 * 1024..=5 * 1024 * 1024 * 1024).contains(&self.part_size_bytes) {
            return Err("artifacts.part_size_bytes must be within 5 MiB..=5 GiB".into());
        }
        if !(1..=64).contains(&self.upload_concurrency) {
            return Err("artifacts.upload_concurrency must be within 1..=64".into());
        }
        if self.backend == Backend::S3 && self.s3_bucket.len() < 3 {
            return Err(
                "artifacts.s3_bucket must be set (at least 3 characters) when artifacts.backend = \"s3\"".into()
            );
        }
        Ok(())
    }

    /// The retention policy: class → how long.
    pub fn retention_policy(&self) -> BTreeMap<String, Keep> {
        self.retention.iter().filter_map(|(c, k)| Some((c.clone(), parse_keep(k)?))).collect()
    }

    /// S3 settings, with credentials from the config or else the standard AWS variables.
    pub fn s3_settings(&self, env: impl Fn(&str) -> Option<String>) -> Result<S3Settings, ArtifactError> {
        let (mut key, mut secret) = (self.s3_access_key_id.clone(), self.s3_secret_access_key.0.clone());
        let mut token = None;
        if key.is_empty() {
            key = env("AWS_ACCESS_KEY_ID").unwrap_or_default();
            secret = env("AWS_SECRET_ACCESS_KEY").unwrap_or_default();
            token = env("AWS_SESSION_TOKEN");
        }
        if key.is_empty() || secret.is_empty() {
            return Err(ArtifactError::Invalid(
                "S3 credentials missing: set artifacts.s3_access_key_id and artifacts.s3_secret_access_key, \
                 or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                    .into(),
            ));
        }
        Ok(S3Settings {
            endpoint: self.s3_endpoint.clone(),
            region: self.s3_region.clone(),
            bucket: self.s3_bucket.clone(),
            prefix: self.s3_prefix.clone(),
            path_style: self.s3_path_style,
            access_key_id: key,
            secret_access_key: secret,
            session_token: token,
            part_size: self.part_size_bytes,
            concurrency: self.upload_concurrency,
        })
    }

    /// Opens the configured byte store.
    pub async fn open_store(&self, data_dir: &Path) -> Result<Arc<dyn ArtifactStore>, ArtifactError> {
        match self.backend {
            Backend::Fs => {
                let dir = self.dir.clone().unwrap_or_else(|| data_dir.join("artifacts"));
                Ok(Arc::new(FsStore::open(dir).await?))
            }
            Backend::S3 => {
                let store = S3Store::new(self.s3_settings(|k| std::env::var(k).ok())?)?;
                if self.s3_create_bucket {
                    store.create_bucket_if_missing().await?;
                }
                Ok(Arc::new(store))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_parses_and_validates() {
        assert_eq!(parse_keep("forever"), Some(Keep::Forever));
        assert_eq!(parse_keep("2d"), Some(Keep::ForMs(2 * 86_400_000)));
        assert_eq!(parse_keep("0d"), None);
        assert_eq!(parse_keep("2h"), None);
        assert!(ArtifactsConfig::default().validate().is_ok());
        let mut cfg = ArtifactsConfig::default();
        cfg.retention.insert("scratch".into(), "soon".into());
        assert!(cfg.validate().is_err_and(|m| m.0.contains("artifacts.retention.scratch")));
        let cfg = ArtifactsConfig { backend: Backend::S3, ..ArtifactsConfig::default() };
        assert!(cfg.validate().is_err_and(|m| m.0.contains("artifacts.s3_bucket")));
    }

    #[test]
    fn credentials_fall_back_to_aws_variables_and_never_print() {
        let cfg = ArtifactsConfig { s3_bucket: "bkt".into(), ..ArtifactsConfig::default() };
        assert!(cfg.s3_settings(|_| None).is_err());
        let s = cfg.s3_settings(|k| Some(format!("{k}-value")));
        let s = s.unwrap();
        assert_eq!(s.access_key_id, "AWS_ACCESS_KEY_ID-value");
        assert!(!format!("{s:?}").contains("AWS_SECRET_ACCESS_KEY-value"));
    }
}
