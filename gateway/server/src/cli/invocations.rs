//! `switchyard invocations list|show|events`: read the store directly (works while the gateway
//! runs, and when it does not).

use switchyard_contract::{InvocationId, ListQuery, StateName, TenantId};

use crate::config::Config;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List a tenant's invocations, newest first.
    List {
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Only this state (admitted, dispatching, retrying, succeeded, failed, unknown, canceled, …).
        #[arg(long)]
        state: Option<String>,
        /// Only the calls to this upstream.
        #[arg(long)]
        upstream: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Show one invocation as JSON.
    Show { id: InvocationId },
    /// Print an invocation's events as JSON lines.
    Events {
        id: InvocationId,
        #[arg(long, default_value_t = 0)]
        after: u64,
    },
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    let store = super::open_store(cfg).await?.invocations;
    match cmd {
        Command::List { tenant, state, upstream, limit, cursor } => {
            let state = state
                .map(|s| StateName::parse(&s).ok_or_else(|| anyhow::anyhow!("unknown state `{s}`")))
                .transpose()?;
            let query = ListQuery {
                state,
                upstreams: upstream.into_iter().collect(),
                limit: Some(limit),
                cursor,
                subject: None,
            };
            let page = store.list(&TenantId::new(tenant)?, &query).await?;
            println!("{:<36}  {:<12}  {:<24}  {:>8}  created_ms", "id", "state", "target", "attempts");
            for inv in &page.items {
                println!(
                    "{:<36}  {:<12}  {:<24}  {:>8}  {}",
                    inv.id.to_string(),
                    inv.state.name().as_str(),
                    inv.target.to_string(),
                    inv.attempts,
                    inv.created_at_ms
                );
            }
            if let Some(c) = page.next_cursor {
                println!("next page: --cursor {c}");
            }
        }
        Command::Show { id } => {
            let inv = store.get(None, id).await?.ok_or_else(|| anyhow::anyhow!("invocation {id} not found"))?;
            println!("{}", serde_json::to_string_pretty(&inv)?);
        }
        Command::Events { id, after } => {
            store.get(None, id).await?.ok_or_else(|| anyhow::anyhow!("invocation {id} not found"))?;
            let mut after = after;
            loop {
                let page = store.events(id, after, 500).await?;
                let Some(last) = page.last() else { break };
                after = last.seq;
                for ev in &page {
                    println!("{}", serde_json::to_string(ev)?);
                }
            }
        }
    }
    Ok(())
}
