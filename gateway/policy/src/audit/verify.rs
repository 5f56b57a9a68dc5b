//! `switchyard audit verify`: walks every partition's chain and every checkpoint, and says which
//! row was changed, removed or moved, and which checkpoint the log no longer agrees with.

use std::collections::BTreeMap;

use serde::Serialize;
use switchyard_contract::{AuditRow, AuditStore, Error};

use super::chain::{CHECKPOINT_TYP, Checkpoint, GENESIS, row_hash};
use crate::grants::GrantKey;

/// Rows read per query while walking a chain.
const PAGE: u32 = 2000;

/// What is wrong at one place of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Problem {
    /// The row's content no longer matches its hash.
    Changed,
    /// Rows `from..=to` are absent from the chain.
    Missing { from: u64, to: u64 },
    /// This row and row `with` have changed places.
    Swapped { with: u64 },
    /// The row does not follow the one before it (a row before it was removed and the rest
    /// renumbered, or changed and re-hashed).
    BrokenLink,
    /// A checkpoint's signature does not verify.
    BadCheckpoint { checkpoint: String, why: String },
    /// A checkpoint names a head the chain no longer has (a cut-off tail, or a rewritten chain).
    DisagreesWithCheckpoint { checkpoint: String, hash: String },
}

/// One problem, where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub partition: String,
    pub seq: u64,
    #[serde(flatten)]
    pub problem: Problem,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (p, s) = (&self.partition, self.seq);
        match &self.problem {
            Problem::Changed => write!(f, "{p} #{s}: changed (its content no longer matches its hash)"),
            Problem::Missing { from, to } if from == to => write!(f, "{p} #{from}: removed"),
            Problem::Missing { from, to } => write!(f, "{p} #{from}..#{to}: removed"),
            Problem::Swapped { with } => write!(f, "{p} #{s} and #{with}: swapped (each follows the other)"),
            Problem::BrokenLink => {
                write!(f, "{p} #{s}: does not follow #{} (a row was removed or re-hashed)", s.saturating_sub(1))
            }
            Problem::BadCheckpoint { checkpoint, why } => write!(f, "checkpoint {checkpoint}: not valid ({why})"),
            Problem::DisagreesWithCheckpoint { checkpoint, hash } => write!(
                f,
                "{p} #{s}: checkpoint {checkpoint} signed this row as {}…, the log does not have it",
                &hash[..hash.len().min(12)]
            ),
        }
    }
}

/// Rows of a partition that no valid checkpoint signs yet (`from..=to`): they verify as a chain,
/// but cutting them off would go unnoticed until a checkpoint covers them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unsigned {
    pub partition: String,
    pub from: u64,
    pub to: u64,
}

impl std::fmt::Display for Unsigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.to - self.from + 1;
        write!(f, "{} #{}..#{}: {n} rows after the last signed checkpoint", self.partition, self.from, self.to)
    }
}

/// What a verification found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub partitions: usize,
    pub rows: u64,
    pub checkpoints: usize,
    /// Checkpoints signed with the grant key (before checkpoints had a key of their own): their
    /// heads are checked against the log, but they sign nothing (whoever mints grants could
    /// have made them).
    pub legacy_checkpoints: usize,
    pub findings: Vec<Finding>,
    /// Each partition's tail no checkpoint signs (not a problem by itself: `audit checkpoint`
    /// signs it, and the gateway does every `checkpoint_interval_s`, at most
    /// [`CHECKPOINT_MAX_BEHIND`](super::CHECKPOINT_MAX_BEHIND) rows behind, and at shutdown).
    pub unsigned: Vec<Unsigned>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Verifies every chain in `store`, and every checkpoint against `key` (the audit key) and the
/// chains. A checkpoint signed with `legacy` (the grant key, which signed checkpoints before they
/// had a key of their own) is checked against the chains but signs nothing.
pub async fn verify(store: &dyn AuditStore, key: &GrantKey, legacy: Option<&GrantKey>) -> Result<Report, Error> {
    let mut report = Report::default();
    // Each partition's rows' hashes by sequence number, for the checkpoints.
    let mut hashes: BTreeMap<String, BTreeMap<u64, String>> = BTreeMap::new();
    for partition in store.partitions().await? {
        let rows = all_rows(store, &partition).await?;
        report.rows += rows.len() as u64;
        report.findings.extend(walk(&partition, &rows)?);
        hashes.insert(partition, rows.into_iter().map(|r| (r.seq, r.hash)).collect());
    }
    report.partitions = hashes.len();
    let checkpoints = store.checkpoints().await?;
    report.checkpoints = checkpoints.len();
    // The highest row of each partition a valid checkpoint signs.
    let mut signed: BTreeMap<String, u64> = BTreeMap::new();
    for stored in checkpoints {
        let open = |key: &GrantKey| {
            key.open::<Checkpoint>(&stored.token, false).and_then(|c| {
                if c.typ == CHECKPOINT_TYP { Ok(c) } else { Err(format!("not a checkpoint (typ `{}`)", c.typ)) }
            })
        };
        let (claims, signs) = match (open(key), legacy.map(open)) {
            (Ok(c), _) => (c, true),
            (Err(_), Some(Ok(c))) => {
                report.legacy_checkpoints += 1;
                (c, false)
            }
            (Err(why), _) => {
                let problem = Problem::BadCheckpoint { checkpoint: stored.id.clone(), why };
                report.findings.push(Finding { partition: String::new(), seq: 0, problem });
                continue;
            }
        };
        for head in claims.heads {
            let held = hashes.get(&head.partition).and_then(|h| h.get(&head.seq));
            if held != Some(&head.hash) {
                let problem = Problem::DisagreesWithCheckpoint { checkpoint: stored.id.clone(), hash: head.hash };
                report.findings.push(Finding { partition: head.partition, seq: head.seq, problem });
            } else if signs {
                let at = signed.entry(head.partition).or_default();
                *at = (*at).max(head.seq);
            }
        }
    }
    for (partition, rows) in &hashes {
        let last = rows.keys().next_back().copied().unwrap_or(0);
        let from = signed.get(partition).copied().unwrap_or(0) + 1;
        if last >= from {
            report.unsigned.push(Unsigned { partition: partition.clone(), from, to: last });
        }
    }
    Ok(report)
}

async fn all_rows(store: &dyn AuditStore, partition: &str) -> Result<Vec<AuditRow>, Error> {
    let mut rows: Vec<AuditRow> = Vec::new();
    loop {
        let after = rows.last().map_or(0, |r| r.seq);
        let page = store.rows(partition, after, PAGE).await?;
        let full = page.len() == PAGE as usize;
        rows.extend(page);
        if !full {
            return Ok(rows);
        }
    }
}

/// The problems of one partition's chain, `rows` in sequence order.
pub(crate) fn walk(partition: &str, rows: &[AuditRow]) -> Result<Vec<Finding>, Error> {
    let mut findings = Vec::new();
    let mut found = |seq, problem| findings.push(Finding { partition: partition.to_string(), seq, problem });
    let (mut expected, mut prev) = (1u64, GENESIS.to_string());
    let mut i = 0;
    while let Some(row) = rows.get(i) {
        let gap = row.seq != expected;
        if gap {
            found(expected, Problem::Missing { from: expected, to: row.seq.saturating_sub(1) });
        }
        if row_hash(row)? != row.hash {
            found(row.seq, Problem::Changed);
        } else if row.prev != prev && !gap {
            // Swapped with the next row: each names the other's place as its predecessor.
            let next = rows.get(i + 1).filter(|n| n.seq == row.seq + 1 && n.hash == row.prev && n.prev == prev);
            if let Some(next) = next
                && row_hash(next)? == next.hash
            {
                found(row.seq, Problem::Swapped { with: next.seq });
                (expected, prev) = (next.seq + 1, row.hash.clone());
                i += 2;
                continue;
            }
            found(row.seq, Problem::BrokenLink);
        }
        (expected, prev) = (row.seq + 1, row.hash.clone());
        i += 1;
    }
    Ok(findings)
}
