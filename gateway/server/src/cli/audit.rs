//! `switchyard audit verify|export|checkpoint`: check the hash-chained audit log end to end,
//! hand it to a SIEM as JSON lines, or sign a checkpoint of every chain's head now.

use std::io::Write as _;

use switchyard_contract::{AuditEntry, AuditStore, Millis};
use switchyard_policy::audit;

use crate::config::Config;

/// The partition the command line appends to (every `switchyard` command shares it; a second
/// command appending at the same moment chains after the first instead of forking it).
pub const CLI_PARTITION: &str = "cli";

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Walk every chain and checkpoint: exits 1 naming each row that was changed, removed or
    /// moved, and each checkpoint the log no longer agrees with.
    Verify {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the entries written since a time, oldest first, one JSON object a line.
    Export {
        /// Milliseconds since the epoch, or an age: `30s`, `15m`, `24h`, `7d`. Default: all.
        #[arg(long)]
        since: Option<String>,
        /// Only `jsonl` for now.
        #[arg(long, default_value = "jsonl")]
        format: String,
    },
    /// Sign a checkpoint of every partition's head now (a serving gateway does so every
    /// `audit.checkpoint_interval_s`).
    Checkpoint,
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    let store = super::open_store(cfg).await?.audit;
    match cmd {
        Command::Verify { json } => {
            let (key, legacy) = (crate::keys::audit_key(cfg)?, crate::keys::grant_key(cfg)?);
            let report = audit::verify(store.as_ref(), &key, Some(&legacy)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for finding in &report.findings {
                    println!("{finding}");
                }
                if report.legacy_checkpoints > 0 {
                    println!(
                        "{} checkpoints are signed with the grant key (before the audit key): checked, not trusted",
                        report.legacy_checkpoints
                    );
                }
                for tail in &report.unsigned {
                    println!("{tail} (`switchyard audit checkpoint` signs it)");
                }
                let verdict = if report.ok() { "ok" } else { "TAMPERED" };
                println!(
                    "audit log {verdict}: {} rows in {} partitions, {} checkpoints, {} problems",
                    report.rows,
                    report.partitions,
                    report.checkpoints,
                    report.findings.len()
                );
            }
            anyhow::ensure!(report.ok(), "the audit log does not verify");
        }
        Command::Export { since, format } => {
            anyhow::ensure!(format == "jsonl", "--format must be jsonl (got `{format}`)");
            let since = since.as_deref().map(since_ms).transpose()?.unwrap_or(0);
            export(store.as_ref(), since).await?;
        }
        Command::Checkpoint => match audit::checkpoint(store.as_ref(), &crate::keys::audit_key(cfg)?, None).await? {
            Some((stored, heads)) => println!("checkpoint {} over {} partitions", stored.id, heads.len()),
            None => println!("the audit log is empty: nothing to sign"),
        },
    }
    Ok(())
}

async fn export(store: &dyn AuditStore, since: Millis) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut after = None;
    loop {
        let rows = store.since(since, after.take(), 1000).await?;
        for row in &rows {
            serde_json::to_writer(&mut out, row)?;
            out.write_all(b"\n")?;
        }
        match rows.last() {
            Some(last) if rows.len() == 1000 => after = Some((last.at_ms, last.partition.clone(), last.seq)),
            _ => break,
        }
    }
    out.flush()?;
    Ok(())
}

/// `--since`: epoch milliseconds, or an age before now.
fn since_ms(text: &str) -> anyhow::Result<Millis> {
    if let Ok(ms) = text.parse::<Millis>() {
        return Ok(ms);
    }
    let (n, unit) = text.split_at(text.len().saturating_sub(1));
    let n: i64 =
        n.parse().map_err(|_| anyhow::anyhow!("--since `{text}`: give epoch ms or an age like 15m, 24h, 7d"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => anyhow::bail!("--since `{text}`: the unit must be s, m, h or d"),
    };
    Ok(switchyard_contract::wall_clock_ms() - secs * 1000)
}

/// Records what a command did, when the audit log is on.
pub async fn record(cfg: &Config, store: &std::sync::Arc<dyn AuditStore>, entry: AuditEntry) -> anyhow::Result<()> {
    if cfg.audited() {
        crate::app::audit_log(store, CLI_PARTITION.into()).append(entry).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::since_ms;

    #[test]
    fn since_takes_epoch_ms_or_an_age() {
        assert_eq!(since_ms("1700000000000").ok(), Some(1_700_000_000_000));
        let day = since_ms("1d").expect("age");
        let now = switchyard_contract::wall_clock_ms();
        assert!((now - day - 86_400_000).abs() < 5_000);
        assert!(since_ms("3w").is_err() && since_ms("x").is_err());
    }
}
