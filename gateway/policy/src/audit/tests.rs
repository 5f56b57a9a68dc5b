use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use switchyard_contract::{
    AuditEntry, AuditKind, AuditLog, AuditRow, AuditStore, ChainHead, Error, Millis, StoredCheckpoint, TenantId,
};

use super::*;
use crate::grants::GrantKey;

/// The audit store's contract in memory (the SQL one runs the same checks in `tests/`).
#[derive(Debug, Default)]
struct Mem {
    rows: Mutex<BTreeMap<(String, u64), AuditRow>>,
    checkpoints: Mutex<Vec<StoredCheckpoint>>,
    fail_next: AtomicBool,
}

impl Mem {
    fn tamper(&self, partition: &str, seq: u64, f: impl FnOnce(&mut AuditRow)) {
        let mut rows = self.rows.lock().expect("lock");
        f(rows.get_mut(&(partition.to_string(), seq)).expect("row"));
    }
    fn remove(&self, partition: &str, seq: u64) {
        self.rows.lock().expect("lock").remove(&(partition.to_string(), seq));
    }
    fn swap(&self, partition: &str, a: u64, b: u64) {
        let mut rows = self.rows.lock().expect("lock");
        let mut ra = rows.remove(&(partition.to_string(), a)).expect("a");
        let mut rb = rows.remove(&(partition.to_string(), b)).expect("b");
        (ra.seq, rb.seq) = (b, a);
        rows.insert((partition.to_string(), b), ra);
        rows.insert((partition.to_string(), a), rb);
    }
}

#[async_trait]
impl AuditStore for Mem {
    async fn head(&self, partition: &str) -> Result<Option<ChainHead>, Error> {
        let rows = self.rows.lock().expect("lock");
        Ok(rows.values().rfind(|r| r.partition == partition).map(|r| ChainHead {
            partition: r.partition.clone(),
            seq: r.seq,
            hash: r.hash.clone(),
        }))
    }
    async fn append(&self, new: &[AuditRow]) -> Result<(), Error> {
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(Error::unavailable("store away"));
        }
        let mut rows = self.rows.lock().expect("lock");
        if new.iter().any(|r| rows.contains_key(&(r.partition.clone(), r.seq))) {
            return Err(Error::conflict("taken"));
        }
        for r in new {
            rows.insert((r.partition.clone(), r.seq), r.clone());
        }
        Ok(())
    }
    async fn heads(&self) -> Result<Vec<ChainHead>, Error> {
        let mut heads = Vec::new();
        for p in self.partitions().await? {
            heads.extend(self.head(&p).await?);
        }
        Ok(heads)
    }
    async fn partitions(&self) -> Result<Vec<String>, Error> {
        let rows = self.rows.lock().expect("lock");
        let mut parts: Vec<String> = rows.keys().map(|(p, _)| p.clone()).collect();
        parts.dedup();
        Ok(parts)
    }
    async fn rows(&self, partition: &str, after: u64, limit: u32) -> Result<Vec<AuditRow>, Error> {
        let rows = self.rows.lock().expect("lock");
        Ok(rows.values().filter(|r| r.partition == partition && r.seq > after).take(limit as usize).cloned().collect())
    }
    async fn since(&self, _: Millis, _: Option<(Millis, String, u64)>, _: u32) -> Result<Vec<AuditRow>, Error> {
        Ok(Vec::new())
    }
    async fn put_checkpoint(&self, c: &StoredCheckpoint) -> Result<(), Error> {
        self.checkpoints.lock().expect("lock").push(c.clone());
        Ok(())
    }
    async fn checkpoints(&self) -> Result<Vec<StoredCheckpoint>, Error> {
        Ok(self.checkpoints.lock().expect("lock").clone())
    }
}

fn entry(i: usize) -> AuditEntry {
    AuditEntry {
        kind: AuditKind::Decision,
        tenant: TenantId::new("acme").expect("tenant"),
        actor: format!("user-{}", i % 3),
        invocation: None,
        detail: json!({"verdict": "allow", "n": i, "upstream": "bank", "nested": {"b": 1, "a": [1, 2]}}),
    }
}

fn key() -> GrantKey {
    GrantKey::from_pkcs8(&GrantKey::generate().expect("key")).expect("key")
}

/// `n` entries appended concurrently through `partitions` writers (a writer each).
async fn filled(n: usize, partitions: &[&str]) -> Arc<Mem> {
    let mem = Arc::new(Mem::default());
    let writers: Vec<AuditWriter> = partitions.iter().map(|p| AuditWriter::start(mem.clone(), *p)).collect();
    let calls = (0..n).map(|i| {
        let w = writers[i % writers.len()].clone();
        async move { w.append(entry(i)).await }
    });
    for r in futures::future::join_all(calls).await {
        r.expect("append");
    }
    mem
}

#[tokio::test]
async fn concurrent_appends_make_whole_chains_that_verify() {
    let mem = filled(1000, &["replica-a", "replica-b"]).await;
    let key = key();
    assert!(checkpoint(mem.as_ref(), &key, None).await.expect("checkpoint").is_some());
    let report = verify(mem.as_ref(), &key, None).await.expect("verify");
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!((report.rows, report.partitions, report.checkpoints), (1000, 2, 1));
    let rows = mem.rows("replica-a", 0, 10_000).await.expect("rows");
    assert_eq!(rows.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=500).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_changed_row_is_named() {
    let mem = filled(20, &["p"]).await;
    mem.tamper("p", 7, |r| r.detail["verdict"] = json!("deny"));
    let report = verify(mem.as_ref(), &key(), None).await.expect("verify");
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert_eq!((report.findings[0].seq, &report.findings[0].problem), (7, &Problem::Changed));
}

#[tokio::test]
async fn a_removed_row_is_named() {
    let mem = filled(20, &["p"]).await;
    mem.remove("p", 12);
    let report = verify(mem.as_ref(), &key(), None).await.expect("verify");
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert_eq!(report.findings[0].problem, Problem::Missing { from: 12, to: 12 });
}

#[tokio::test]
async fn a_swapped_pair_is_named() {
    let mem = filled(20, &["p"]).await;
    mem.swap("p", 5, 6);
    let report = verify(mem.as_ref(), &key(), None).await.expect("verify");
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert_eq!((report.findings[0].seq, &report.findings[0].problem), (5, &Problem::Swapped { with: 6 }));
}

#[tokio::test]
async fn a_rehashed_row_breaks_the_next_link_and_a_cut_tail_disagrees_with_the_checkpoint() {
    let mem = filled(10, &["p"]).await;
    let key = key();
    checkpoint(mem.as_ref(), &key, None).await.expect("checkpoint");
    // Rewrite row 3 and give it a fresh, valid hash: row 4 no longer follows it.
    mem.tamper("p", 3, |r| {
        r.actor = "someone-else".into();
        r.hash = row_hash(r).expect("hash");
    });
    mem.remove("p", 10);
    let report = verify(mem.as_ref(), &key, None).await.expect("verify");
    let problems: Vec<(u64, Problem)> = report.findings.iter().map(|f| (f.seq, f.problem.clone())).collect();
    assert!(problems.contains(&(4, Problem::BrokenLink)), "{problems:?}");
    assert!(
        problems.iter().any(|(s, p)| *s == 10 && matches!(p, Problem::DisagreesWithCheckpoint { .. })),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_checkpoint_signed_by_another_key_is_refused() {
    let mem = filled(5, &["p"]).await;
    checkpoint(mem.as_ref(), &key(), None).await.expect("checkpoint");
    let report = verify(mem.as_ref(), &key(), None).await.expect("verify");
    assert!(matches!(report.findings.as_slice(), [Finding { problem: Problem::BadCheckpoint { .. }, .. }]));
}

#[tokio::test]
async fn a_checkpoint_signed_with_the_grant_key_is_checked_but_signs_nothing() {
    let mem = filled(6, &["p"]).await;
    let (audit, grants) = (key(), key());
    // Made by whoever holds the grant key (or by a gateway before checkpoints had their own key).
    checkpoint(mem.as_ref(), &grants, None).await.expect("checkpoint");
    let report = verify(mem.as_ref(), &audit, Some(&grants)).await.expect("verify");
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(report.legacy_checkpoints, 1);
    assert_eq!(report.unsigned, vec![Unsigned { partition: "p".into(), from: 1, to: 6 }], "its rows stay unsigned");
    // Its heads are still checked: a cut tail disagrees with it.
    mem.remove("p", 6);
    let report = verify(mem.as_ref(), &audit, Some(&grants)).await.expect("verify");
    assert!(matches!(report.findings.as_slice(), [Finding { problem: Problem::DisagreesWithCheckpoint { .. }, .. }]));
    // Once the audit key signs, the log is signed up to its head.
    checkpoint(mem.as_ref(), &audit, None).await.expect("checkpoint");
    let report = verify(mem.as_ref(), &audit, Some(&grants)).await.expect("verify");
    assert_eq!(report.unsigned, Vec::new());
}

#[tokio::test]
async fn a_grant_token_does_not_pass_for_a_checkpoint() {
    let mem = filled(3, &["p"]).await;
    let key = key();
    let claims = crate::grants::GrantClaims {
        jti: "grt_1".into(),
        iss: String::new(),
        tenant: "acme".into(),
        sub: "u".into(),
        upstream: "*".into(),
        operation: "*".into(),
        ceiling: crate::Tier::Routine,
        when: Vec::new(),
        iat: 0,
        exp: u64::MAX / 2,
        approval: None,
    };
    let token = key.mint(claims).expect("mint");
    mem.put_checkpoint(&StoredCheckpoint { id: "ckp_forged".into(), at_ms: 0, token }).await.expect("put");
    let report = verify(mem.as_ref(), &key, None).await.expect("verify");
    assert!(matches!(report.findings.as_slice(), [Finding { problem: Problem::BadCheckpoint { .. }, .. }]));
}

#[tokio::test]
async fn two_writers_on_one_partition_do_not_fork_it() {
    let mem = Arc::new(Mem::default());
    let (a, b) = (AuditWriter::start(mem.clone(), "shared"), AuditWriter::start(mem.clone(), "shared"));
    let calls = (0..200).map(|i| {
        let w = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move { w.append(entry(i)).await }
    });
    let ok = futures::future::join_all(calls).await.into_iter().filter(Result::is_ok).count();
    let report = verify(mem.as_ref(), &key(), None).await.expect("verify");
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(report.rows, ok as u64, "every answered entry is in the chain, and nothing else");
    assert!(ok >= 150, "most appends get through a contended partition ({ok}/200)");
}

#[tokio::test]
async fn a_failed_append_fails_its_callers_and_leaves_no_hole() {
    let mem = Arc::new(Mem::default());
    let w = AuditWriter::start(mem.clone(), "p");
    w.append(entry(0)).await.expect("first");
    mem.fail_next.store(true, Ordering::SeqCst);
    assert!(w.append(entry(1)).await.is_err(), "the caller learns its entry was not recorded");
    w.append(entry(2)).await.expect("third");
    let report = verify(mem.as_ref(), &key(), None).await.expect("verify");
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(report.rows, 2);
}

/// A tail appended after the last checkpoint verifies as a chain, so cutting it off went
/// unnoticed and unsaid: `verify` now names it, per partition, until a checkpoint signs it.
#[tokio::test]
async fn verify_names_the_tail_no_checkpoint_signs() {
    let mem = filled(10, &["p", "q"]).await;
    let key = key();
    let unsigned = |r: &Report| r.unsigned.iter().map(|u| (u.partition.clone(), u.from, u.to)).collect::<Vec<_>>();
    let report = verify(mem.as_ref(), &key, None).await.expect("verify");
    assert!(report.ok());
    assert_eq!(unsigned(&report), [("p".to_string(), 1, 5), ("q".to_string(), 1, 5)], "no checkpoint yet");
    checkpoint(mem.as_ref(), &key, None).await.expect("checkpoint");
    let w = AuditWriter::start(mem.clone(), "p");
    for i in 0..3 {
        w.append(entry(i)).await.expect("append");
    }
    let report = verify(mem.as_ref(), &key, None).await.expect("verify");
    assert!(report.ok());
    assert_eq!(unsigned(&report), [("p".to_string(), 6, 8)], "three rows after the checkpoint");
    // Cut off: the chain still verifies, and the cut tail is no longer there to name; the
    // checkpoint keeps everything before it.
    mem.remove("p", 8);
    mem.remove("p", 7);
    let report = verify(mem.as_ref(), &key, None).await.expect("verify");
    assert_eq!(unsigned(&report), [("p".to_string(), 6, 6)]);
    checkpoint(mem.as_ref(), &key, None).await.expect("checkpoint");
    assert!(verify(mem.as_ref(), &key, None).await.expect("verify").unsigned.is_empty());
}
