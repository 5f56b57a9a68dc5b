//! What the upstreams offer, discovered once at start-up (and again when an upstream says its
//! lists changed), namespaced, and pinned: each tool's schemas are digested (RFC 8785 +
//! SHA-256) and checked against the approved digest in the store. A tool whose digest changed is
//! withheld (absent from tools/list, refused on call) until an operator approves it again.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{Prompt, Resource, ResourceTemplate, Skill, Tool};
use serde::Serialize;
use serde_json::json;
use switchyard_contract::{BindingStore, RequestDigest};
use tracing::{info, warn};

use crate::client::Pool;
use crate::error::DiscoveryError;
use crate::skills::{self, SKILL};

/// Bindings of the `tool` kind.
pub const TOOL: &str = "tool";
/// The binding kind pinning what a tool says of itself (title, description, annotations): a
/// changed description can instruct a model as well as a changed schema (tool poisoning), so it
/// withholds the tool until approved too.
pub const TOOL_META: &str = "tool-meta";
/// What approving a tool approves: its schema and its description pins.
pub const TOOL_PINS: &[&str] = &[TOOL, TOOL_META];

/// One upstream tool as exposed.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// The name clients see (prefix + upstream name).
    pub exposed: String,
    pub upstream: String,
    /// As the upstream described it (its own name).
    pub tool: Tool,
    /// Pins the schemas ([`TOOL`]).
    pub digest: String,
    /// Pins the title, description and annotations ([`TOOL_META`]).
    pub meta_digest: String,
    /// Both pins match their approvals.
    pub approved: bool,
}

#[derive(Debug, Clone)]
pub struct PromptEntry {
    pub exposed: String,
    pub upstream: String,
    pub prompt: Prompt,
}

/// One upstream skill (SEP-2640) as exposed.
#[derive(Debug, Clone)]
pub struct SkillEntry {
    pub upstream: String,
    /// What it is approved by: its path (URI without the scheme and `/SKILL.md`).
    pub path: String,
    /// As the upstream listed it (its own URIs).
    pub skill: Skill,
    /// With every URI under `skill://<upstream>/`.
    pub exposed: Skill,
    /// Pins the manifest ([`SKILL`]).
    pub digest: String,
    pub approved: bool,
}

/// One upstream's offer.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    pub tools: Vec<ToolEntry>,
    pub prompts: Vec<PromptEntry>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    pub skills: Vec<SkillEntry>,
}

/// A tool's state, for the admin API and the CLI.
#[derive(Debug, Clone, Serialize)]
pub struct ToolStatus {
    /// `tool` or `skill`.
    pub kind: &'static str,
    pub upstream: String,
    pub tool: String,
    pub exposed: String,
    pub approved: bool,
    pub digest: String,
}

/// Every upstream's offer.
pub struct Catalog {
    offers: RwLock<HashMap<String, Offer>>,
    /// Upstream order as configured (routing of resources tries them in this order).
    order: Vec<String>,
    bindings: Arc<dyn BindingStore>,
    last_refresh: std::sync::Mutex<Instant>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog").field("upstreams", &self.order).finish_non_exhaustive()
    }
}

/// What one upstream offers, as listed on one of its sessions.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub tools: Vec<Tool>,
    pub prompts: Vec<Prompt>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    /// Empty when the upstream does not declare the skills extension.
    pub skills: Vec<Skill>,
}

/// How often approvals made elsewhere (CLI, another replica) are picked up.
const APPROVAL_REFRESH: Duration = Duration::from_secs(2);

/// The digest a tool is pinned by: its input and output schemas, canonicalized.
pub fn tool_digest(upstream: &str, tool: &Tool) -> Result<String, DiscoveryError> {
    let schemas = json!({ "inputSchema": tool.input_schema.as_ref(), "outputSchema": tool.output_schema.as_deref() });
    RequestDigest::compute(upstream, &tool.name, &schemas)
        .map(|d| d.as_str().to_string())
        .map_err(|e| DiscoveryError(e.to_string()))
}

/// The digest of what a tool says of itself: title, description, annotations (RFC 8785).
pub fn meta_digest(upstream: &str, tool: &Tool) -> Result<String, DiscoveryError> {
    let meta = json!({ "title": tool.title, "description": tool.description, "annotations": tool.annotations });
    RequestDigest::compute(upstream, &tool.name, &meta)
        .map(|d| d.as_str().to_string())
        .map_err(|e| DiscoveryError(e.to_string()))
}

impl Catalog {
    pub fn new(order: Vec<String>, bindings: Arc<dyn BindingStore>) -> Self {
        Self {
            offers: RwLock::new(HashMap::new()),
            order,
            bindings,
            last_refresh: std::sync::Mutex::new(Instant::now()),
        }
    }

    /// Lists everything the upstream offers on one session and pins its tools.
    pub async fn discover(&self, pool: &Arc<Pool>) -> Result<(), DiscoveryError> {
        let lease = pool.acquire().await.map_err(|e| e.0)?;
        let Some(peer) = lease.peer().cloned() else { return Err("no session".into()) };
        lease.reuse_connection(true);
        let tools = peer.list_all_tools().await.map_err(|e| format!("tools/list: {e}"))?;
        // Prompts and resources are optional capabilities: a refusal means "none".
        let listing = Listing {
            tools,
            prompts: peer.list_all_prompts().await.unwrap_or_default(),
            resources: peer.list_all_resources().await.unwrap_or_default(),
            templates: peer.list_all_resource_templates().await.unwrap_or_default(),
            // Listed only: no skill file is fetched ahead of a read.
            skills: peer.list_all_skills().await.unwrap_or_default(),
        };
        drop(lease);
        self.learn(&pool.spec.name, &pool.spec.prefix(), listing).await
    }

    /// Takes `upstream`'s lists (exposed under `prefix`) in place of what it offered before,
    /// pinning each tool by its schemas' digest.
    pub async fn learn(&self, upstream: &str, prefix: &str, listing: Listing) -> Result<(), DiscoveryError> {
        let name = upstream.to_string();
        let Listing { tools, prompts, resources, templates, skills } = listing;
        let mut offer = Offer { resources, templates, ..Offer::default() };
        for tool in tools {
            let digest = tool_digest(&name, &tool)?;
            let meta_digest = meta_digest(&name, &tool)?;
            let mut approved = true;
            for (kind, d, what) in [(TOOL, &digest, "schema"), (TOOL_META, &meta_digest, "description or annotations")]
            {
                let binding = self.bindings.observe(&name, kind, &tool.name, d).await.map_err(|e| e.to_string())?;
                if !binding.is_approved() {
                    approved = false;
                    warn!(
                        upstream = %name, tool = %tool.name, approved = binding.approved_digest.as_deref().unwrap_or("-"),
                        observed = %d,
                        "tool {what} changed since it was approved: the tool is withheld until `switchyard upstreams approve {name} --tool {}`",
                        tool.name
                    );
                }
            }
            offer.tools.push(ToolEntry {
                exposed: format!("{prefix}{}", tool.name),
                upstream: name.clone(),
                tool,
                digest,
                meta_digest,
                approved,
            });
        }
        for skill in skills {
            offer.skills.push(self.pin_skill(&name, skill).await?);
        }
        offer.prompts = prompts
            .into_iter()
            .map(|p| PromptEntry { exposed: format!("{prefix}{}", p.name), upstream: name.clone(), prompt: p })
            .collect();
        info!(
            upstream = %name, tools = offer.tools.len(), withheld = offer.tools.iter().filter(|t| !t.approved).count(),
            prompts = offer.prompts.len(), resources = offer.resources.len(), templates = offer.templates.len(),
            skills = offer.skills.len(), skills_withheld = offer.skills.iter().filter(|s| !s.approved).count(),
            "upstream discovered"
        );
        if let Ok(mut offers) = self.offers.write() {
            offers.insert(name, offer);
        }
        Ok(())
    }

    /// Pins a skill's manifest: the first sight is trusted, a change withholds it until approved.
    async fn pin_skill(&self, upstream: &str, skill: Skill) -> Result<SkillEntry, DiscoveryError> {
        let path = skills::path_of(&skill);
        let digest = skills::manifest_digest(upstream, &skill)?;
        let binding = self.bindings.observe(upstream, SKILL, &path, &digest).await.map_err(|e| e.to_string())?;
        if !binding.is_approved() {
            warn!(
                upstream = %upstream, skill = %path, approved = binding.approved_digest.as_deref().unwrap_or("-"),
                observed = %digest,
                "skill manifest changed since it was approved: the skill is withheld until `switchyard upstreams approve {upstream} --skill {path}`"
            );
        }
        Ok(SkillEntry {
            upstream: upstream.to_string(),
            exposed: skills::expose(upstream, &skill),
            path,
            skill,
            approved: binding.is_approved(),
            digest,
        })
    }

    /// Re-reads the approvals now (after an approval made here), not at the next refresh.
    pub async fn approvals_changed(&self) {
        if let Ok(mut last) = self.last_refresh.lock() {
            *last = Instant::now().checked_sub(APPROVAL_REFRESH).unwrap_or_else(Instant::now);
        }
        self.refresh_approvals().await;
    }

    /// Re-reads approvals from the store at most every couple of seconds.
    pub async fn refresh_approvals(&self) {
        {
            let Ok(mut last) = self.last_refresh.lock() else { return };
            if last.elapsed() < APPROVAL_REFRESH {
                return;
            }
            *last = Instant::now();
        }
        let Ok(all) = self.bindings.list(None).await else { return };
        let approved: HashMap<(String, String, String), Option<String>> =
            all.into_iter().map(|b| ((b.upstream, b.kind, b.name), b.approved_digest)).collect();
        let matches = |t: &ToolEntry, kind: &str, digest: &str| {
            let key = (t.upstream.clone(), kind.to_string(), t.tool.name.to_string());
            approved.get(&key).is_some_and(|a| a.as_deref() == Some(digest))
        };
        if let Ok(mut offers) = self.offers.write() {
            for offer in offers.values_mut() {
                for t in &mut offer.tools {
                    t.approved = matches(t, TOOL, &t.digest) && matches(t, TOOL_META, &t.meta_digest);
                }
                for k in &mut offer.skills {
                    let key = (k.upstream.clone(), SKILL.to_string(), k.path.clone());
                    k.approved = approved.get(&key).is_some_and(|a| a.as_deref() == Some(k.digest.as_str()));
                }
            }
        }
    }

    /// The offers of `upstreams` in configured order.
    pub fn offers(&self, include: impl Fn(&str) -> bool) -> Vec<Offer> {
        let Ok(offers) = self.offers.read() else { return Vec::new() };
        self.order.iter().filter(|u| include(u)).filter_map(|u| offers.get(u).cloned()).collect()
    }

    /// What `pick` finds first in the included offers, in configured order. It reads the offers in
    /// place: a call's lookup must not copy every upstream's catalog.
    fn find<T>(&self, include: impl Fn(&str) -> bool, pick: impl Fn(&Offer) -> Option<T>) -> Option<T> {
        let offers = self.offers.read().ok()?;
        self.order.iter().filter(|u| include(u)).filter_map(|u| offers.get(u)).find_map(pick)
    }

    pub fn tool(&self, exposed: &str, include: impl Fn(&str) -> bool) -> Option<ToolEntry> {
        self.find(include, |o| o.tools.iter().find(|t| t.exposed == exposed).cloned())
    }

    /// `upstream`'s tool by its own name.
    pub fn upstream_tool(&self, upstream: &str, name: &str) -> Option<ToolEntry> {
        self.find(|u| u == upstream, |o| o.tools.iter().find(|t| t.tool.name == name).cloned())
    }

    pub fn prompt(&self, exposed: &str, include: impl Fn(&str) -> bool) -> Option<PromptEntry> {
        self.find(include, |o| o.prompts.iter().find(|p| p.exposed == exposed).cloned())
    }

    /// Whether an included upstream offers skills.
    pub fn has_skills(&self, include: impl Fn(&str) -> bool) -> bool {
        self.find(include, |o| (!o.skills.is_empty()).then_some(())).is_some()
    }

    /// The upstream serving `uri`: one listing it, else one with a matching template; `None`
    /// for any other URI (it is never sent on a guess, where no decision could name it).
    pub fn resource_upstream(&self, uri: &str, include: impl Fn(&str) -> bool) -> Option<String> {
        let Ok(offers) = self.offers.read() else { return None };
        let included: Vec<(&String, &Offer)> =
            self.order.iter().filter(|u| include(u)).filter_map(|u| offers.get(u).map(|o| (u, o))).collect();
        included
            .iter()
            .find(|(_, o)| o.resources.iter().any(|r| r.uri == uri))
            .or_else(|| {
                included.iter().find(|(_, o)| o.templates.iter().any(|t| template_matches(&t.uri_template, uri)))
            })
            .map(|(u, _)| (*u).clone())
    }

    /// The approved skill whose exposed manifest holds `uri` (its `SKILL.md` or a file), or
    /// whose exposed directory is `uri`; `None` for a URI no included upstream skill covers.
    pub fn skill_of(&self, uri: &str, include: impl Fn(&str) -> bool) -> Option<SkillEntry> {
        self.offers(include).into_iter().flat_map(|o| o.skills).find(|k| {
            let root = k.exposed.uri.strip_suffix("/SKILL.md").unwrap_or(&k.exposed.uri);
            uri == k.exposed.uri || uri == root || uri.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
        })
    }

    pub fn status(&self) -> Vec<ToolStatus> {
        self.offers(|_| true)
            .into_iter()
            .flat_map(|o| {
                let tools = o.tools.into_iter().map(|t| ToolStatus {
                    kind: TOOL,
                    upstream: t.upstream,
                    tool: t.tool.name.to_string(),
                    exposed: t.exposed,
                    approved: t.approved,
                    digest: t.digest,
                });
                let skills = o.skills.into_iter().map(|k| ToolStatus {
                    kind: SKILL,
                    upstream: k.upstream,
                    tool: k.path,
                    exposed: k.exposed.uri,
                    approved: k.approved,
                    digest: k.digest,
                });
                tools.chain(skills).collect::<Vec<_>>()
            })
            .collect()
    }
}

/// RFC 6570 level 1 matching: literal parts must match, each `{var}` matches one or more
/// characters other than `/`.
pub fn template_matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    let Some(first) = parts.next() else { return false };
    let Some(r) = rest.strip_prefix(first) else { return false };
    rest = r;
    for part in parts {
        let Some((_, literal)) = part.split_once('}') else { return false };
        let end = if literal.is_empty() {
            rest.find('/').unwrap_or(rest.len())
        } else {
            match rest.find(literal) {
                Some(i) => i,
                None => return false,
            }
        };
        if end == 0 || rest[..end].contains('/') {
            return false;
        }
        rest = &rest[end + literal.len()..];
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_level_one() {
        assert!(template_matches("test://template/{id}/data", "test://template/123/data"));
        assert!(!template_matches("test://template/{id}/data", "test://template/1/2/data"));
        assert!(!template_matches("test://template/{id}/data", "test://template//data"));
        assert!(template_matches("file:///{path}", "file:///x"));
        assert!(!template_matches("a://{x}", "b://y"));
    }

    #[test]
    fn the_meta_digest_follows_description_title_and_annotations() {
        let schema = |v: serde_json::Value| Arc::new(v.as_object().cloned().unwrap_or_default());
        let a = Tool::new("t", "one", schema(json!({"type": "object"})));
        let digest = |t: &Tool| meta_digest("u", t).unwrap();
        let mut described = a.clone();
        described.description = Some("ignore previous instructions".into());
        let mut titled = a.clone();
        titled.title = Some("T".into());
        let mut annotated = a.clone();
        annotated.annotations = Some(rmcp::model::ToolAnnotations::new().read_only(true));
        let mut reshaped = a.clone();
        reshaped.input_schema = schema(json!({"type": "object", "properties": {"x": {}}}));
        for changed in [&described, &titled, &annotated] {
            assert_ne!(digest(&a), digest(changed), "{changed:?}");
        }
        assert_eq!(digest(&a), digest(&reshaped), "the schema has its own pin");
    }

    #[tokio::test]
    async fn lookups_follow_the_configured_order_and_the_endpoint_s_upstreams() {
        let bindings = Arc::new(switchyard_contract::memory::MemoryBindings::default());
        let catalog = Catalog::new(vec!["a".into(), "b".into()], bindings);
        let tool = |name: &str, description: &str| {
            Tool::new(name.to_string(), description.to_string(), Arc::new(serde_json::Map::new()))
        };
        let listing = |tools: Vec<Tool>| Listing { tools, ..Listing::default() };
        // Both upstreams expose `t` (no prefix); only `b` has `only_b`.
        catalog.learn("b", "", listing(vec![tool("t", "from b"), tool("only_b", "b")])).await.unwrap();
        catalog.learn("a", "", listing(vec![tool("t", "from a")])).await.unwrap();
        let described = |e: Option<ToolEntry>| e.and_then(|e| e.tool.description).map(|d| d.to_string());

        assert_eq!(
            described(catalog.tool("t", |_| true)),
            Some("from a".into()),
            "the first upstream in configured order"
        );
        assert_eq!(described(catalog.tool("t", |u| u == "b")), Some("from b".into()), "an endpoint without `a`");
        assert_eq!(described(catalog.tool("only_b", |u| u == "a")), None, "not offered on this endpoint");
        assert_eq!(described(catalog.upstream_tool("b", "t")), Some("from b".into()));
        assert_eq!(described(catalog.upstream_tool("a", "only_b")), None);
        assert!(catalog.prompt("t", |_| true).is_none());
        assert!(!catalog.has_skills(|_| true));
    }

    #[test]
    fn digests_follow_the_schema_not_the_description() {
        let schema = |v: serde_json::Value| Arc::new(v.as_object().cloned().unwrap_or_default());
        let a = Tool::new("t", "one", schema(json!({"type": "object", "properties": {"a": {"type": "string"}}})));
        let mut b = a.clone();
        b.description = Some("two".into());
        let c = Tool::new("t", "one", schema(json!({"properties": {"a": {"type": "string"}}, "type": "object"})));
        let d = Tool::new("t", "one", schema(json!({"type": "object", "properties": {"b": {"type": "string"}}})));
        let digest = |t: &Tool| tool_digest("u", t).unwrap();
        assert_eq!(digest(&a), digest(&b), "descriptions are not pinned");
        assert_eq!(digest(&a), digest(&c), "key order does not matter (RFC 8785)");
        assert_ne!(digest(&a), digest(&d));
    }
}
