//! The gateway's secrets and keys on disk: each configured, else generated once into a private
//! file of the data directory (owner-only) and read from there afterwards, so that a restart and
//! every replica sharing the directory's files use the same ones.

use std::path::PathBuf;

use anyhow::Context as _;
use switchyard_mcp::Sealer;

use crate::config::{Config, Secret};

/// The admin token: configured, read from `token_file`, or generated once into the data dir.
pub(crate) fn admin_token(cfg: &Config) -> anyhow::Result<(Secret, String)> {
    let (token, source) = if cfg.admin.token.0.is_empty() {
        let path: PathBuf = cfg.admin.token_file.clone().unwrap_or_else(|| cfg.server.data_dir.join("admin-token"));
        if cfg.admin.token_file.is_some() {
            anyhow::ensure!(path.exists(), "admin.token_file {} cannot be read", path.display());
        }
        let generated = !path.exists();
        let token = generated_secret(&path)?;
        (token, if generated { format!("{} (generated)", path.display()) } else { path.display().to_string() })
    } else {
        (cfg.admin.token.clone(), "admin.token".into())
    };
    anyhow::ensure!(
        !is_placeholder(&token.0),
        "the admin token from {source} is a placeholder (\"{}…\"): set a real one (e.g. 64 random hex characters)",
        token.0.chars().take(12).collect::<String>()
    );
    Ok((token, source))
}

/// Whether `secret` is an example value from a template (`replace-me`, `changeme`, …), which
/// anyone who read the template knows.
pub(crate) fn is_placeholder(secret: &str) -> bool {
    let s = secret.to_ascii_lowercase();
    ["replace-with", "replace-me", "replace_me", "changeme", "change-me", "change_me", "placeholder", "your-token"]
        .iter()
        .any(|p| s.contains(p))
}

/// A secret kept in a private file: read it, or generate 64 random hex characters into it.
pub(crate) fn generated_secret(path: &std::path::Path) -> anyhow::Result<Secret> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let secret = text.trim();
        anyhow::ensure!(secret.len() >= 16, "the secret in {} is shorter than 16 characters", path.display());
        return Ok(Secret(secret.to_string()));
    }
    let secret = Sealer::generate_hex().map_err(anyhow::Error::msg)?;
    write_private(path, &secret).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Secret(secret))
}

/// The key artifact links are signed with: `artifacts.link_key`, else
/// `<data_dir>/artifact-link-key` (generated once).
pub(crate) fn artifact_links(cfg: &Config) -> anyhow::Result<switchyard_contract::ArtifactLinks> {
    let key = match &cfg.artifacts.link_key {
        k if !k.0.is_empty() => k.clone(),
        _ => generated_secret(&cfg.server.data_dir.join("artifact-link-key"))?,
    };
    Ok(switchyard_contract::ArtifactLinks::new(key.0.as_bytes()))
}

/// The key sealing upstream OAuth tokens: `mcp.token_key`, else `<data_dir>/mcp-token-key`
/// (generated once).
pub fn mcp_sealer(cfg: &Config) -> anyhow::Result<Sealer> {
    let key = match &cfg.mcp.token_key {
        k if !k.0.is_empty() => k.clone(),
        _ => {
            std::fs::create_dir_all(&cfg.server.data_dir)?;
            generated_secret(&cfg.server.data_dir.join("mcp-token-key"))?
        }
    };
    Sealer::from_hex(&key.0).map_err(|e| anyhow::anyhow!("mcp.token_key: {e}"))
}

/// The key grants are signed and verified with: `[policy] grant_key_file`, else
/// `<data_dir>/grant-signing-key` (generated once; replicas share it).
pub fn grant_key(cfg: &Config) -> anyhow::Result<switchyard_policy::grants::GrantKey> {
    signing_key(&grant_key_path(cfg))
}

pub(crate) fn grant_key_path(cfg: &Config) -> std::path::PathBuf {
    cfg.policy
        .as_ref()
        .and_then(|p| p.grant_key_file.as_ref())
        .map_or_else(|| cfg.server.data_dir.join("grant-signing-key"), std::path::PathBuf::from)
}

/// The key audit checkpoints are signed and verified with: `[audit] key_file`, else
/// `<data_dir>/audit-signing-key` (generated once; replicas share it). Never the grant key's
/// file: whoever mints grants must not be able to re-sign history.
pub fn audit_key(cfg: &Config) -> anyhow::Result<switchyard_policy::grants::GrantKey> {
    let path = cfg.audit.key_file.clone().unwrap_or_else(|| cfg.server.data_dir.join("audit-signing-key"));
    let grants = grant_key_path(cfg);
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    anyhow::ensure!(
        !same(&path, &grants),
        "[audit] key_file is the grant key ({}): checkpoints need a key of their own",
        path.display()
    );
    signing_key(&path)
}

/// The Ed25519 key in `path` (hex PKCS#8), generated and written there (owner-only) if absent.
pub(crate) fn signing_key(path: &std::path::Path) -> anyhow::Result<switchyard_policy::grants::GrantKey> {
    use switchyard_policy::grants::GrantKey;
    let der = match std::fs::read_to_string(path) {
        Ok(text) => hex::decode(text.trim()).with_context(|| format!("{} is not hex", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let der = GrantKey::generate()?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            write_private(path, &hex::encode(&der)).with_context(|| format!("cannot write {}", path.display()))?;
            der
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))),
    };
    Ok(GrantKey::from_pkcs8(&der)?)
}

/// The MRTR `requestState` key: `mcp.request_state_key`, else `<data_dir>/mcp-request-state-key`.
pub(crate) fn request_state_key(cfg: &Config) -> anyhow::Result<Secret> {
    match &cfg.mcp.request_state_key {
        k if !k.0.is_empty() => Ok(k.clone()),
        _ => generated_secret(&cfg.server.data_dir.join("mcp-request-state-key")),
    }
}

/// The key sealing webhook credentials: `a2a.push.credentials_key`, else
/// `<data_dir>/a2a-push-key` (generated once).
pub(crate) fn a2a_sealer(cfg: &Config) -> anyhow::Result<switchyard_a2a::sealing::CredentialSealer> {
    let key = match &cfg.a2a.push.credentials_key {
        k if !k.0.is_empty() => k.clone(),
        _ => generated_secret(&cfg.server.data_dir.join("a2a-push-key"))?,
    };
    switchyard_a2a::sealing::CredentialSealer::from_hex(&key.0).map_err(anyhow::Error::msg)
}

pub(crate) fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().create_new(true).write(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Kubernetes template's admin token, as shipped, is refused (it was accepted before).
    #[test]
    fn a_template_admin_token_is_refused() {
        let template = include_str!("../../../deploy/kubernetes/secret.yaml");
        let shipped = template
            .lines()
            .find_map(|l| l.trim().strip_prefix("admin-token:"))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_else(|| panic!("no admin-token in the template"));
        let dir = tempfile::tempdir().unwrap();
        let text =
            |token: &str| format!("[server]\ndata_dir = \"{}\"\n[admin]\ntoken = \"{token}\"\n", dir.path().display());
        let cfg = Config::from_text(&text(&shipped), "test", std::iter::empty()).unwrap();
        let refused = admin_token(&cfg).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("placeholder"), "accepted: {refused}");
        let real = "0123456789abcdef".repeat(4);
        let cfg = Config::from_text(&text(&real), "test", std::iter::empty()).unwrap();
        assert!(admin_token(&cfg).is_ok());
        assert!(is_placeholder("CHANGEME-now") && !is_placeholder("a-long-random-token-9f8e7d"));
    }
}
