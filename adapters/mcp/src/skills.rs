//! MCP Skills (SEP-2640) at the gateway: local skill directories (rmcp's [`SkillCatalog`]), and
//! the skills of upstream servers under origin-scoped URIs (`skill://<upstream>/<path>`), pinned
//! by their manifest and verified file by file when read.
//!
//! A skill's manifest (its frontmatter and every file's digest and size) is pinned like a tool
//! schema: the first sight is trusted, a changed manifest withholds the skill until
//! `switchyard upstreams approve <upstream> --skill <path>`. Files are never fetched ahead: a
//! `resources/read` of a skill file goes to the upstream, and its bytes reach the client only if
//! their size and digest are the manifest's (and, for `SKILL.md`, its frontmatter is the
//! manifest's).

use std::sync::Arc;

use base64::Engine as _;
use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::{ResourceContents, Skill, SkillResource, SkillResources};
use serde_json::Value;
use switchyard_contract::RequestDigest;

use crate::config::SkillsConfig;

/// The binding kind a skill's manifest is pinned under.
pub const SKILL: &str = "skill";
/// What approving a skill approves: its manifest's pin.
pub const SKILL_PINS: &[&str] = &[SKILL];
/// The operation a skill file read is journaled (and decided) as, on the skill's upstream:
/// `read_only`. (`:` cannot appear in a tool name, so no tool is mistaken for it.)
pub const SKILL_READ: &str = "skill:read";

/// A skill file read as its invocation stores it (and its digest covers): which file, of which
/// skill, under which reviewed manifest — so the journal shows who loaded which skill version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillRead {
    /// The file, as the upstream names it.
    pub uri: String,
    /// The skill's path at the upstream.
    pub skill: String,
    /// The digest of the approved manifest the bytes are held to.
    pub manifest: String,
}
const SCHEME: &str = "skill://";

/// The local skill directories, loaded at start.
#[derive(Debug, Default)]
pub struct LocalSkills {
    catalogs: Vec<(String, Arc<SkillCatalog>)>,
}

impl LocalSkills {
    /// Loads every `[[mcp.skills]]` directory (a skill over a limit is skipped and logged by
    /// name; the others load). A directory that cannot be read is an error.
    pub fn load(config: &[SkillsConfig]) -> Result<Self, String> {
        let mut catalogs = Vec::new();
        for c in config {
            let catalog = SkillCatalog::from_dir(&c.path)
                .map_err(|e| format!("mcp.skills `{}` ({}): {e}", c.name, c.path.display()))?;
            tracing::info!(skills = %c.name, path = %c.path.display(), count = catalog.skills().len(), "local skills loaded");
            catalogs.push((c.name.clone(), Arc::new(catalog)));
        }
        Ok(Self { catalogs })
    }

    /// The catalogs `serves` names, in configured order.
    pub fn served(&self, serves: impl Fn(&str) -> bool) -> impl Iterator<Item = &SkillCatalog> {
        self.catalogs.iter().filter(move |(n, _)| serves(n)).map(|(_, c)| c.as_ref())
    }
}

/// `skill://a/b` as `<upstream>` exposes it: `skill://<upstream>/a/b`.
pub fn scoped(upstream: &str, uri: &str) -> Option<String> {
    uri.strip_prefix(SCHEME).map(|rest| format!("{SCHEME}{upstream}/{rest}"))
}

/// The upstream's own URI of `uri` exposed under `upstream`, if it is one.
pub fn unscoped(upstream: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(SCHEME)?.strip_prefix(upstream)?.strip_prefix('/')?;
    (!rest.is_empty()).then(|| format!("{SCHEME}{rest}"))
}

/// The path a skill is approved by: its URI without the scheme and `/SKILL.md`.
pub fn path_of(skill: &Skill) -> String {
    let uri = skill.uri.strip_prefix(SCHEME).unwrap_or(&skill.uri);
    uri.strip_suffix("/SKILL.md").unwrap_or(uri).to_string()
}

/// `skill` with every URI scoped under `upstream`.
pub fn expose(upstream: &str, skill: &Skill) -> Skill {
    let mut out = skill.clone();
    out.uri = scoped(upstream, &skill.uri).unwrap_or_else(|| skill.uri.clone());
    if let SkillResources::Files(files) = &mut out.resources {
        for f in files {
            if let Some(uri) = scoped(upstream, &f.uri) {
                f.uri = uri;
            }
        }
    }
    out
}

/// The digest a manifest is pinned by: frontmatter, every file's URI, digest and size (RFC 8785).
pub fn manifest_digest(upstream: &str, skill: &Skill) -> Result<String, String> {
    let manifest = serde_json::json!({
        "uri": skill.uri,
        "frontmatter": skill.frontmatter,
        "resources": skill.resources,
    });
    RequestDigest::compute(upstream, &path_of(skill), &manifest)
        .map(|d| d.as_str().to_string())
        .map_err(|e| e.to_string())
}

/// Why bytes read for a skill file are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{0} is not a file of the skill's reviewed manifest")]
    NotInManifest(String),
    #[error("{0}")]
    Integrity(String),
    #[error("{uri}: its frontmatter differs from the reviewed manifest's ({why})")]
    Frontmatter { uri: String, why: String },
    #[error("{0}: the upstream sent no bytes for it")]
    Empty(String),
}

/// The bytes of one read's contents (text as UTF-8, a blob decoded).
pub fn bytes_of(contents: &[ResourceContents]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for c in contents {
        match c {
            ResourceContents::TextResourceContents { text, .. } => out.extend_from_slice(text.as_bytes()),
            ResourceContents::BlobResourceContents { blob, .. } => out.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|e| format!("a blob that is not base64: {e}"))?,
            ),
            _ => return Err("contents of an unknown kind".into()),
        }
    }
    Ok(out)
}

/// Checks the bytes read for `file` (the upstream's own URI) against `skill`'s manifest (the
/// upstream's own form): size, then digest, then — for the `SKILL.md` — the frontmatter.
pub fn verify(skill: &Skill, file: &str, bytes: &[u8]) -> Result<(), Refused> {
    let SkillResources::Files(files) = &skill.resources else {
        // A "dynamic" skill promises no digests: nothing to hold the bytes to.
        return Ok(());
    };
    let entry: &SkillResource =
        files.iter().find(|f| f.uri == file).ok_or_else(|| Refused::NotInManifest(file.to_string()))?;
    entry.verify(bytes).map_err(|e| Refused::Integrity(e.to_string()))?;
    if file == skill.uri {
        let found = frontmatter(bytes).map_err(|why| Refused::Frontmatter { uri: file.to_string(), why })?;
        let promised = serde_json::to_value(&skill.frontmatter).unwrap_or(Value::Null);
        if found != promised {
            let why = format!("the file says {found}, the manifest {promised}");
            return Err(Refused::Frontmatter { uri: file.to_string(), why });
        }
    }
    Ok(())
}

/// The YAML frontmatter of a `SKILL.md` (between a first line `---` and the next), as JSON.
pub fn frontmatter(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SKILL.md is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("SKILL.md does not start with a `---` frontmatter block".into());
    }
    let mut yaml = String::new();
    for line in lines {
        if line.trim_end() == "---" {
            return yaml_serde::from_str::<Value>(&yaml)
                .map_err(|e| format!("SKILL.md's frontmatter is not YAML: {e}"));
        }
        yaml.push_str(line);
    }
    Err("SKILL.md's frontmatter block is not closed".into())
}

#[cfg(test)]
mod tests {
    use rmcp::model::SkillFrontmatter;

    use super::*;

    const MD: &str = "---\nname: pdf-processing\ndescription: Extract PDFs\n---\n\nSkill body.\n";

    fn skill() -> Skill {
        let files = vec![
            SkillResource::from_bytes("skill://pdf-processing/SKILL.md", MD.as_bytes()),
            SkillResource::from_bytes("skill://pdf-processing/references/FORMS.md", b"forms"),
        ];
        Skill::new(
            "skill://pdf-processing/SKILL.md",
            SkillFrontmatter::new("pdf-processing", "Extract PDFs"),
            SkillResources::Files(files),
        )
    }

    #[test]
    fn uris_are_scoped_by_upstream_both_ways() {
        assert_eq!(scoped("a", "skill://x/SKILL.md").as_deref(), Some("skill://a/x/SKILL.md"));
        assert_eq!(unscoped("a", "skill://a/x/SKILL.md").as_deref(), Some("skill://x/SKILL.md"));
        assert_eq!(unscoped("a", "skill://ab/x/SKILL.md"), None, "another upstream's");
        assert_eq!(unscoped("a", "skill://a/"), None);
        assert_eq!(scoped("a", "file:///x"), None);
        let e = expose("up", &skill());
        assert_eq!(e.uri, "skill://up/pdf-processing/SKILL.md");
        assert!(
            matches!(&e.resources, SkillResources::Files(f) if f[1].uri == "skill://up/pdf-processing/references/FORMS.md")
        );
        assert_eq!(path_of(&skill()), "pdf-processing");
    }

    #[test]
    fn a_manifest_digest_changes_with_any_file() {
        let a = manifest_digest("up", &skill());
        let mut changed = skill();
        if let SkillResources::Files(f) = &mut changed.resources {
            f[1] = SkillResource::from_bytes("skill://pdf-processing/references/FORMS.md", b"forms!");
        }
        assert!(a.is_ok());
        assert_ne!(a, manifest_digest("up", &changed));
        assert_ne!(a, manifest_digest("other", &skill()));
    }

    #[test]
    fn reads_are_held_to_the_manifest() {
        let s = skill();
        assert_eq!(verify(&s, "skill://pdf-processing/SKILL.md", MD.as_bytes()), Ok(()));
        assert_eq!(verify(&s, "skill://pdf-processing/references/FORMS.md", b"forms"), Ok(()));
        let same_size = MD.replace("Skill body.", "Evil body!!");
        assert!(
            matches!(verify(&s, "skill://pdf-processing/SKILL.md", same_size.as_bytes()), Err(Refused::Integrity(m)) if m.contains("digest"))
        );
        assert!(
            matches!(verify(&s, "skill://pdf-processing/references/FORMS.md", b"forms and more"), Err(Refused::Integrity(m)) if m.contains("bytes"))
        );
        assert!(matches!(verify(&s, "skill://pdf-processing/other.md", b""), Err(Refused::NotInManifest(_))));
        // A SKILL.md whose digest and size were recomputed, but whose frontmatter lies.
        let lying = MD.replace("Extract PDFs", "Exfiltrate credentials");
        let mut tampered = s.clone();
        if let SkillResources::Files(f) = &mut tampered.resources {
            f[0] = SkillResource::from_bytes("skill://pdf-processing/SKILL.md", lying.as_bytes());
        }
        assert!(matches!(
            verify(&tampered, "skill://pdf-processing/SKILL.md", lying.as_bytes()),
            Err(Refused::Frontmatter { .. })
        ));
    }

    #[test]
    fn frontmatter_is_read_from_the_leading_block() {
        assert_eq!(
            frontmatter(MD.as_bytes()).ok(),
            Some(serde_json::json!({"name": "pdf-processing", "description": "Extract PDFs"}))
        );
        assert!(frontmatter(b"no frontmatter").is_err());
        assert!(frontmatter(b"---\nname: x\n").is_err(), "unclosed");
        assert_eq!(frontmatter(b"---\r\nname: x\r\n---\r\nbody").ok(), Some(serde_json::json!({"name": "x"})));
    }
}
