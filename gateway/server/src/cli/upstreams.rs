//! `switchyard upstreams list|approve`: the pinned upstream tool schemas. A tool whose schema
//! changed since approval is withheld until `approve` accepts the schema discovery last saw;
//! running gateways pick the approval up within seconds.

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
        /// The tool's name at the upstream (not prefixed). Default: every changed tool.
        #[arg(long)]
        tool: Option<String>,
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
        Command::Approve { upstream, tool, by } => {
            let known = bindings.list(Some(&upstream)).await?;
            if let Some(t) = &tool {
                anyhow::ensure!(known.iter().any(|b| &b.name == t), "upstream `{upstream}` has no pinned tool `{t}`");
            } else {
                anyhow::ensure!(!known.is_empty(), "upstream `{upstream}` has no pinned tools");
            }
            let n = bindings.approve(&upstream, tool.as_deref(), &by).await?;
            println!("approved {n} changed tool pin(s) (schemas, descriptions) of `{upstream}`");
        }
    }
    Ok(())
}
