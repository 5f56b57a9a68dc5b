//! The audit store's contract on SQLite and on a throw-away PostgreSQL, through the
//! `AuditStore` port and the policy core's chain writer: concurrent writers (several per
//! partition among them) build whole chains that verify; a taken sequence number is a conflict,
//! never an overwrite; export pages in time order; the database itself refuses to change or
//! remove a row; and `verify` names a row changed, removed or swapped behind the triggers' back.

use std::sync::Arc;

use serde_json::json;
use switchyard_contract::{AuditEntry, AuditKind, AuditLog, AuditStore, ErrorKind, TenantId};
use switchyard_policy::audit::{AuditWriter, Problem, checkpoint, verify};
use switchyard_policy::grants::GrantKey;
use switchyard_store::StoreOptions;

/// One database: its audit store, and a way to run raw SQL on it (as an attacker with the
/// database's credentials would).
struct Db {
    audit: Arc<dyn AuditStore>,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    async fn sqlite() -> Db {
        let (dir, url) = switchyard_tests::sqlite_url();
        let audit =
            switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}")).audit;
        Db { audit, url, _dir: Some(dir) }
    }

    async fn postgres() -> Db {
        let url = switchyard_tests::pg::database().await;
        let audit =
            switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}")).audit;
        Db { audit, url, _dir: None }
    }

    /// Runs `sql` outside the gateway; `Err` carries the database's refusal.
    async fn raw(&self, sql: &str) -> Result<(), String> {
        if self.url.starts_with("sqlite:") {
            use sqlx::Executor as _;
            let pool = sqlx::SqlitePool::connect(&self.url).await.map_err(|e| e.to_string())?;
            let r = pool.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))).await;
            pool.close().await;
            r.map(drop).map_err(|e| e.to_string())
        } else {
            switchyard_tests::pg::psql(&self.url, sql).map(drop)
        }
    }

    /// Turns the append-only triggers off, runs `sql`, and turns them back on.
    async fn tamper(&self, sql: &str) {
        let wrapped = if self.url.starts_with("sqlite:") {
            format!(
                "DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete; {sql}; \
                 CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END; \
                 CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;"
            )
        } else {
            format!(
                "BEGIN; ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only; {sql}; \
                 ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only; COMMIT;"
            )
        };
        self.raw(&wrapped).await.unwrap_or_else(|e| panic!("tampering failed: {e}"));
    }
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::Db::sqlite().await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(super::Db::postgres().await).await;
            }
        }
    )*};
}

both!(
    concurrent_writers_build_whole_chains,
    a_taken_sequence_number_is_a_conflict,
    the_database_refuses_to_change_or_remove_a_row,
    tampering_behind_the_triggers_is_named,
);

fn key() -> GrantKey {
    GrantKey::from_pkcs8(&GrantKey::generate().unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
}

fn entry(i: usize) -> AuditEntry {
    AuditEntry {
        kind: if i.is_multiple_of(5) { AuditKind::Approved } else { AuditKind::Decision },
        tenant: TenantId::new(if i.is_multiple_of(2) { "acme" } else { "globex" }).unwrap_or_else(|e| panic!("{e}")),
        actor: format!("user-{}", i % 7),
        invocation: Some(switchyard_contract::InvocationId::new()),
        detail: json!({"verdict": "allow", "n": i, "reason": "ünïcode and \"quotes\"", "ratio": 0.1}),
    }
}

/// `n` entries through `writers` (round robin), all at once.
async fn append_all(writers: &[AuditWriter], n: usize) {
    let calls = (0..n).map(|i| {
        let w = writers[i % writers.len()].clone();
        async move { w.append(entry(i)).await }
    });
    for r in futures::future::join_all(calls).await {
        r.unwrap_or_else(|e| panic!("append: {e}"));
    }
}

async fn concurrent_writers_build_whole_chains(db: Db) {
    let s = db.audit.clone();
    // Two replicas, and two writers sharing the command line's partition.
    let writers = [
        AuditWriter::start(s.clone(), "replica-a"),
        AuditWriter::start(s.clone(), "replica-b"),
        AuditWriter::start(s.clone(), "cli"),
        AuditWriter::start(s.clone(), "cli"),
    ];
    append_all(&writers, 800).await;
    let key = key();
    let (stored, heads) = checkpoint(s.as_ref(), &key, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no checkpoint"));
    assert_eq!(
        heads.iter().map(|h| (h.partition.as_str(), h.seq)).collect::<Vec<_>>(),
        [("cli", 400), ("replica-a", 200), ("replica-b", 200)]
    );
    assert!(
        checkpoint(s.as_ref(), &key, Some(&heads)).await.unwrap_or_else(|e| panic!("{e}")).is_none(),
        "nothing moved: no new checkpoint"
    );
    let report = verify(s.as_ref(), &key, None).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!((report.rows, report.partitions, report.checkpoints), (800, 3, 1));
    assert_eq!(s.checkpoints().await.unwrap_or_else(|e| panic!("{e}"))[0], stored);

    // Export: every row once, in (time, partition, sequence) order, across pages.
    let (mut seen, mut after) = (Vec::new(), None);
    loop {
        let page = s.since(0, after.take(), 150).await.unwrap_or_else(|e| panic!("{e}"));
        let Some(last) = page.last() else { break };
        after = Some((last.at_ms, last.partition.clone(), last.seq));
        seen.extend(page);
    }
    assert_eq!(seen.len(), 800);
    let keys: Vec<_> = seen.iter().map(|r| (r.at_ms, r.partition.clone(), r.seq)).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "strictly ordered, no row twice");
    assert_eq!(seen[0].detail["reason"], "ünïcode and \"quotes\"", "details round-trip");
    let future = s.since(i64::MAX / 2, None, 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(future.is_empty());
}

async fn a_taken_sequence_number_is_a_conflict(db: Db) {
    let s = db.audit.clone();
    append_all(&[AuditWriter::start(s.clone(), "p")], 3).await;
    let rows = s.rows("p", 0, 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    let head = s.head("p").await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("no head"));
    assert_eq!((head.seq, head.hash.as_str()), (3, rows[2].hash.as_str()));
    // A second writer that believed the chain shorter: refused whole, nothing overwritten.
    let mut forged = rows[1..].to_vec();
    forged[0].actor = "mallory".into();
    forged[1].seq = 4;
    let err = s.append(&forged).await.err().unwrap_or_else(|| panic!("a taken seq was accepted"));
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let after = s.rows("p", 0, 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.len(), 3, "the batch is all or nothing: seq 4 was not written either");
    assert_eq!(after[1].actor, rows[1].actor);
    assert!(s.head("nobody").await.unwrap_or_else(|e| panic!("{e}")).is_none());
}

async fn the_database_refuses_to_change_or_remove_a_row(db: Db) {
    append_all(&[AuditWriter::start(db.audit.clone(), "p")], 3).await;
    for sql in ["UPDATE audit_log SET actor = 'mallory' WHERE seq = 2", "DELETE FROM audit_log WHERE seq = 2"] {
        let refused = db.raw(sql).await.err().unwrap_or_else(|| panic!("`{sql}` was allowed"));
        assert!(refused.contains("append-only"), "{refused}");
    }
    let report = verify(db.audit.as_ref(), &key(), None).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(report.ok(), "{:?}", report.findings);
}

async fn tampering_behind_the_triggers_is_named(db: Db) {
    let w = AuditWriter::start(db.audit.clone(), "p");
    append_all(&[w], 30).await;
    let key = key();
    checkpoint(db.audit.as_ref(), &key, None).await.unwrap_or_else(|e| panic!("{e}"));
    db.tamper("UPDATE audit_log SET detail = '{\"verdict\":\"deny\"}' WHERE part = 'p' AND seq = 4").await;
    db.tamper("DELETE FROM audit_log WHERE part = 'p' AND seq = 11").await;
    db.tamper(
        "UPDATE audit_log SET seq = -seq WHERE part = 'p' AND seq IN (20, 21); \
         UPDATE audit_log SET seq = CASE seq WHEN -20 THEN 21 ELSE 20 END WHERE part = 'p' AND seq IN (-20, -21)",
    )
    .await;
    db.tamper("DELETE FROM audit_log WHERE part = 'p' AND seq = 30").await;
    let report = verify(db.audit.as_ref(), &key, None).await.unwrap_or_else(|e| panic!("{e}"));
    let found: Vec<(u64, Problem)> = report.findings.iter().map(|f| (f.seq, f.problem.clone())).collect();
    assert!(found.contains(&(4, Problem::Changed)), "{found:?}");
    assert!(found.contains(&(11, Problem::Missing { from: 11, to: 11 })), "{found:?}");
    assert!(found.contains(&(20, Problem::Swapped { with: 21 })), "{found:?}");
    assert!(
        found.iter().any(|(s, p)| *s == 30 && matches!(p, Problem::DisagreesWithCheckpoint { .. })),
        "a cut-off tail disagrees with the checkpoint: {found:?}"
    );
    assert_eq!(found.len(), 4, "nothing else is reported: {found:?}");
}

/// On SQLite (one writer, the group commit) a decision is recorded in its admission's own
/// commit: concurrent admissions carrying their decisions and appended entries make one whole
/// chain, every admitted call's decision is in it, and an admission whose entry cannot be
/// written is not admitted either (both or neither). PostgreSQL has no such log: its store
/// refuses an admission that carries one rather than drop the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_commits_with_its_admission_on_sqlite() {
    use switchyard_contract::state::NewInvocation;
    use switchyard_contract::{Admission, EffectClass, InvocationId, Principal, RequestDigest, Target, WorkerId};
    let db = Db::sqlite().await;
    let stores = switchyard_store::connect(&db.url, &StoreOptions::default()).await.unwrap();
    let log = stores.audit.log_in_commits("replica").unwrap_or_else(|| panic!("SQLite logs in its commits"));
    assert_eq!(log.admission_partition(), Some("replica"));
    let draft = |i: usize| {
        let request = json!({"n": i});
        let id = InvocationId::new();
        NewInvocation {
            id,
            principal: Principal::new(TenantId::new("acme").unwrap(), "alice"),
            target: Target { upstream: "demo".into(), operation: "count".into(), effect: EffectClass::Write },
            digest: RequestDigest::compute("demo", "count", &request).unwrap(),
            request,
            ingress_key: None,
            worker: WorkerId::new(),
            lease_ttl_ms: 30_000,
            hold: None,
            parent: None,
            trace: None,
            first_attempt: None,
            proves_unsent: false,
            audit: Some(("replica".into(), AuditEntry { invocation: Some(id), ..entry(i) })),
        }
    };
    let admissions = (0..60).map(|i| {
        let store = stores.invocations.clone();
        let d = draft(i);
        async move { store.admit(d).await }
    });
    let appends = (0..60).map(|i| {
        let log = log.clone();
        async move { log.append(entry(1000 + i)).await }
    });
    let (admitted, appended) =
        futures::future::join(futures::future::join_all(admissions), futures::future::join_all(appends)).await;
    let ids: Vec<String> = admitted
        .into_iter()
        .map(|r| match r {
            Ok(Admission::Created(inv)) => inv.id.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(appended.iter().all(Result::is_ok), "{appended:?}");
    let report = verify(db.audit.as_ref(), &key(), None).await.unwrap();
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!((report.rows, report.partitions), (120, 1));
    let rows = db.audit.rows("replica", 0, 1000).await.unwrap();
    for id in &ids {
        assert!(rows.iter().any(|r| r.invocation.as_deref() == Some(id.as_str())), "{id}'s decision is recorded");
    }

    // The entry cannot be written: the admission is undone with it.
    db.raw("ALTER TABLE audit_log RENAME TO audit_log_away").await.unwrap();
    let refused = draft(999);
    let id = refused.id;
    assert!(stores.invocations.admit(refused).await.is_err(), "admitted without its decision");
    assert!(stores.invocations.get(None, id).await.unwrap().is_none(), "nothing admitted");
    db.raw("ALTER TABLE audit_log_away RENAME TO audit_log").await.unwrap();
    let later = draft(1000);
    assert!(matches!(stores.invocations.admit(later).await, Ok(Admission::Created(_))));
    let report = verify(db.audit.as_ref(), &key(), None).await.unwrap();
    assert!(report.ok() && report.rows == 121, "{report:?}");

    // A second process on the same file appending to the same partition: the first writer's
    // remembered head goes stale, its next insert collides and chains again; nothing forks.
    let other = switchyard_store::connect(&db.url, &StoreOptions::default()).await.unwrap();
    let other_log = other.audit.log_in_commits("replica").unwrap_or_else(|| panic!("SQLite logs in its commits"));
    for round in 0..6 {
        let both = (0..20usize).map(|i| {
            let l = if i.is_multiple_of(2) { log.clone() } else { other_log.clone() };
            async move { l.append(entry(2000 + round * 100 + i)).await }
        });
        let results = futures::future::join_all(both).await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }
    let report = verify(db.audit.as_ref(), &key(), None).await.unwrap();
    assert!(report.ok() && report.rows == 241, "{report:?}");

    // PostgreSQL refuses an admission carrying an entry it cannot record with it.
    let pg =
        switchyard_store::connect(&switchyard_tests::pg::database().await, &StoreOptions::default()).await.unwrap();
    assert!(pg.audit.log_in_commits("replica").is_none());
    assert!(pg.invocations.admit(draft(1)).await.is_err());
}
