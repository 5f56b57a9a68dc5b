//! `switchyard upstreams list|approve`: the pinned upstream tool schemas and skill manifests. A
//! tool whose schema changed since approval, or a skill whose manifest did, is withheld until
//! `approve` accepts what discovery last saw; running gateways pick the approval up within
//! seconds.

use crate::config::Config;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every pinned tool: approved, or withheld after a schema change.
    List {
        /// Only this upstream.
        upstream: Option<String>,
    },
    /// Approve the schema last observed for one tool, or for every changed tool of an upstream.
    Approve {
        upstream: String,
        /// The tool's name at the upstream (not prefixed). Default: every changed tool and skill.
        #[arg(long)]
        tool: Option<String>,
        /// A skill (SEP-2640), by its path at the upstream (its URI without `skill://` and
        /// `/SKILL.md`, e.g. `pdf-processing`).
        #[arg(long, conflicts_with = "tool")]
        skill: Option<String>,
        /// Who approves (recorded).
        #[arg(long, default_value = "operator")]
        by: String,
    },
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    let bindings = super::open_store(cfg).await?.bindings;
    match cmd {
        Command::List { upstream } => {
            let all = bindings.list(upstream.as_deref()).await?;
            if all.is_empty() {
                println!("no pinned tools (they are pinned when a gateway first discovers an upstream)");
            }
            for b in all {
                let status = match (b.is_approved(), b.kind.as_str()) {
                    (true, _) => "approved",
                    (false, switchyard_mcp::catalog::TOOL_META) => "WITHHELD (description or annotations changed)",
                    (false, switchyard_mcp::skills::SKILL) => "WITHHELD (skill manifest changed)",
                    (false, _) => "WITHHELD (schema changed)",
                };
                println!(
                    "{}/{} {}: {status} (by {})",
                    b.upstream,
                    b.kind,
                    b.name,
                    b.approved_by.as_deref().unwrap_or("-")
                );
            }
        }
        Command::Approve { upstream, tool, skill, by } => {
            let known = bindings.list(Some(&upstream)).await?;
            let only = match (&tool, &skill) {
                (Some(t), _) => Some((t.as_str(), switchyard_mcp::catalog::TOOL_PINS, "tool")),
                (None, Some(k)) => Some((k.as_str(), switchyard_mcp::skills::SKILL_PINS, "skill")),
                (None, None) => None,
            };
            match only {
                Some((n, kinds, what)) => anyhow::ensure!(
                    known.iter().any(|b| b.name == n && kinds.contains(&b.kind.as_str())),
                    "upstream `{upstream}` has no pinned {what} `{n}`"
                ),
                None => anyhow::ensure!(!known.is_empty(), "upstream `{upstream}` has no pinned tools"),
            }
            let n = bindings.approve(&upstream, only.map(|(n, kinds, _)| (n, kinds)), &by).await?;
            println!("approved {n} changed pin(s) (tool schemas, descriptions, skill manifests) of `{upstream}`");
        }
    }
    Ok(())
}
