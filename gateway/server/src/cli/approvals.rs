//! `switchyard approvals list|approve|deny`: the calls the policy enforcement point held. Works
//! on the store directly, like `reconcile`: an approval is committed at once and a running
//! gateway drives the call at its next recovery pass (the approval leaves no live lease); a
//! denial fails the call without running it.

use switchyard_contract::{AuditKind, EventKind, InvocationId, ListQuery, Principal, StateName, TenantId, WorkerId};

use crate::config::Config;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// The tenant's held calls, newest first, with why each was held.
    List {
        #[arg(long, default_value = "default")]
        tenant: String,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Let a held call run (recorded with the approver's name; not the call's own caller).
    Approve {
        id: InvocationId,
        #[arg(long, default_value = "operator")]
        by: String,
    },
    /// Refuse a held call: it fails `approval_denied` and nothing runs.
    Deny {
        id: InvocationId,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long, default_value = "operator")]
        by: String,
    },
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    let stores = super::open_store(cfg).await?;
    let store = stores.invocations;
    match cmd {
        Command::List { tenant, limit } => {
            let query =
                ListQuery { state: Some(StateName::AwaitingApproval), limit: Some(limit), ..ListQuery::default() };
            let page = store.list(&TenantId::new(tenant)?, &query).await?;
            println!("{:<36}  {:<20}  {:<24}  reason", "id", "caller", "target");
            for inv in &page.items {
                let first = store.events(inv.id, 0, 1).await?;
                let reason = first.first().and_then(|e| match &e.kind {
                    EventKind::Admitted { held: Some(h), .. } => Some(h.reason.clone()),
                    _ => None,
                });
                println!(
                    "{:<36}  {:<20}  {:<24}  {}",
                    inv.id.to_string(),
                    inv.principal.subject,
                    inv.target.to_string(),
                    reason.unwrap_or_default()
                );
            }
        }
        Command::Approve { id, by } => {
            let inv = store.get(None, id).await?.ok_or_else(|| anyhow::anyhow!("invocation {id} not found"))?;
            let actor = by.clone();
            let by = Principal::new(inv.principal.tenant.clone(), by);
            inv.check_approver(&by, "approve")?; // refused before anything is minted
            let policy = crate::app::policy_point(cfg, stores.grants.clone())?;
            let (jti, grant) = match policy.approval_grant(&inv, &by).await? {
                Some(g) => (Some(g.id), Some(g.token)),
                None => (None, None),
            };
            // No live lease: the next recovery pass of any replica takes the call and runs it.
            let worker = WorkerId::new();
            let (after, _) = store
                .transition(id, Box::new(move |i, now| i.approve(by.clone(), worker, now, 0, grant.clone())))
                .await?;
            println!(
                "{} is approved and {}; a running gateway dispatches it shortly",
                after.id,
                after.state.name().as_str()
            );
            let entry = after.audit_entry(AuditKind::Approved, &actor, serde_json::json!({ "grant": jti }));
            super::audit::record(cfg, &stores.audit, entry).await?;
        }
        Command::Deny { id, reason, by } => {
            let inv = store.get(None, id).await?.ok_or_else(|| anyhow::anyhow!("invocation {id} not found"))?;
            let reason = reason.unwrap_or_else(|| format!("denied by {by}"));
            let (actor, detail) = (by.clone(), serde_json::json!({ "reason": reason }));
            let by = Principal::new(inv.principal.tenant.clone(), by);
            let (after, _) =
                store.transition(id, Box::new(move |i, _| i.deny_approval(by.clone(), reason.clone()))).await?;
            println!("{} is {}", after.id, after.state.name().as_str());
            let entry = after.audit_entry(AuditKind::ApprovalDenied, &actor, detail);
            super::audit::record(cfg, &stores.audit, entry).await?;
        }
    }
    Ok(())
}
