//! `switchyard reconcile <id> applied|not-applied`: resolve an `unknown` outcome. Audited as an
//! event naming the operator; repeating the same decision is a no-op; any other state refuses.

use switchyard_contract::{Decision, InvocationId, Principal};

use crate::config::Config;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Verdict {
    /// The effect happened upstream.
    Applied,
    /// The effect did not happen.
    NotApplied,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    id: InvocationId,
    #[arg(value_enum)]
    verdict: Verdict,
    /// With `applied`: the result to record (JSON). Default `null`.
    #[arg(long)]
    result: Option<String>,
    /// With `not-applied`: why. Default "reconciled by operator: not applied".
    #[arg(long)]
    message: Option<String>,
    /// Who is reconciling (recorded in the event).
    #[arg(long, default_value = "operator")]
    by: String,
}

pub async fn run(args: Args, cfg: &Config) -> anyhow::Result<()> {
    let stores = super::open_store(cfg).await?;
    let store = stores.invocations;
    let inv = store.get(None, args.id).await?.ok_or_else(|| anyhow::anyhow!("invocation {} not found", args.id))?;
    let decision = match args.verdict {
        Verdict::Applied => {
            let result = match &args.result {
                Some(text) => serde_json::from_str(text).map_err(|e| anyhow::anyhow!("--result is not JSON: {e}"))?,
                None => serde_json::Value::Null,
            };
            Decision::Applied { result }
        }
        Verdict::NotApplied => Decision::NotApplied {
            message: args.message.unwrap_or_else(|| "reconciled by operator: not applied".into()),
        },
    };
    let by = Principal::new(inv.principal.tenant.clone(), args.by.clone());
    let audited = decision.clone();
    let (after, events) =
        store.transition(args.id, Box::new(move |i, _| i.reconcile(decision.clone(), by.clone()))).await?;
    let note = if events.is_empty() { " (already reconciled with this decision)" } else { "" };
    println!("{} is now {}{note}", after.id, after.state.name().as_str());
    if !events.is_empty() {
        let entry = after.reconciliation_entry(&args.by, &audited);
        super::audit::record(cfg, &stores.audit, entry).await?;
    }
    Ok(())
}
