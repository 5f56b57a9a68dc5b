//! The fault nemesis (Jepsen's approach, on one machine): three gateway replicas on one
//! PostgreSQL, an upstream that records every physical call, clients that retry as real ones
//! do, faults scheduled from a printed seed, and an independent checker of the history.
//!
//! Topology: each replica runs in a network namespace of its own ([`netns`]) and reaches the
//! database and the upstream over a bridge, through [`link::Link`]s of the harness's own (which
//! also carry slow links); where namespaces cannot be made (not root), the links carry every
//! fault. The report says which ran.

pub mod admin;
pub mod checker;
pub mod cluster;
pub mod link;
pub mod nemesis;
pub mod netns;
pub mod rng;
pub mod workload;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How long and how hard a run is.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    pub seconds: u64,
    pub seed: u64,
    pub clients: usize,
}

/// What a run did and found.
#[derive(Debug, Serialize)]
pub struct Report {
    pub seed: u64,
    pub seconds: u64,
    pub topology: String,
    pub faults: Vec<nemesis::Fault>,
    pub faults_by_kind: BTreeMap<&'static str, usize>,
    /// Operations by (keyed or not, outcome).
    pub operations: BTreeMap<String, usize>,
    pub physical_calls: usize,
    pub attempts: usize,
    pub approvals: usize,
    pub unknown_in_store: usize,
    pub unsettled_in_store: usize,
    pub anomalies_by_class: BTreeMap<&'static str, usize>,
    pub anomalies: Vec<checker::Anomaly>,
    pub recovery_p50_ms: Option<u64>,
    pub recovery_p99_ms: Option<u64>,
    pub not_recovered: usize,
    pub history: Vec<workload::Op>,
    /// Approvals the gateway did not accept (refused, or no answer).
    pub approvals_not_accepted: Vec<admin::Approval>,
}

/// Runs the profile: start, load with faults, heal, let the system settle, check.
pub async fn run(profile: Profile) -> Report {
    let mut cluster = cluster::Cluster::start().await;
    let bases: Vec<String> = cluster.replicas.iter().map(|r| r.base.clone()).collect();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(profile.seconds);
    let clients: Vec<_> = (0..profile.clients)
        .map(|c| tokio::spawn(workload::client(c, bases.clone(), profile.seed, start, deadline)))
        .collect();
    // The approver goes on a while after the clients stop, so no held call is left waiting.
    let settled = deadline + Duration::from_secs(10);
    let approver = tokio::spawn(admin::approver(bases.clone(), start, settled));
    let faults = nemesis::run(&mut cluster, profile.seed, start, deadline).await;
    let mut history = Vec::new();
    for c in clients {
        history.extend(c.await.unwrap_or_default());
    }
    tokio::task::block_in_place(|| cluster.heal());
    let approvals = approver.await.unwrap_or_default();
    // Let recovery settle what the faults left in flight (every lease runs out, every
    // unknown is resolved where the gateway can).
    let settle_until = Instant::now() + Duration::from_secs(20);
    let mut stored = checker::Stored::read(&cluster.store_url);
    while stored.unsettled > 0 && Instant::now() < settle_until {
        tokio::time::sleep(Duration::from_millis(500)).await;
        stored = checker::Stored::read(&cluster.store_url);
    }
    let demo_calls = cluster.demo_calls();
    let mut physical = cluster.physical_calls();
    for (invocation, _) in &demo_calls {
        let key = stored.demo.get(invocation).map_or(invocation, |(key, _)| key);
        *physical.entry(key.clone()).or_default() += 1;
    }
    if std::env::var_os("SWITCHYARD_NEMESIS_KEEP").is_some() {
        let dir = tempfile::TempDir::new().map(|d| std::mem::replace(&mut cluster.dir, d));
        if let Ok(dir) = dir {
            eprintln!("nemesis: the replicas' data and logs are kept in {}", dir.keep().display());
        }
    }
    let audit = audit_verifies(&cluster);
    let mut anomalies = checker::check(&history, &approvals, &physical, &stored, &demo_calls, audit);
    for a in anomalies.iter_mut().filter(|a| !a.op.is_empty()) {
        a.detail = format!("{}; the store: {}", a.detail, checker::explain(&cluster.store_url, &a.op).trim());
    }
    let mut recoveries: Vec<u64> = faults.iter().filter_map(|f| f.recovered_ms).collect();
    recoveries.sort_unstable();
    let pct =
        |p: f64| (!recoveries.is_empty()).then(|| recoveries[((recoveries.len() - 1) as f64 * p).round() as usize]);
    let mut faults_by_kind = BTreeMap::new();
    for f in &faults {
        *faults_by_kind.entry(f.kind).or_default() += 1;
    }
    let mut operations = BTreeMap::new();
    for op in &history {
        let kind = match (op.write, op.keyed) {
            (false, _) => "read",
            (true, true) => "keyed write",
            (true, false) => "keyless write",
        };
        *operations.entry(format!("{kind} ({}) {}", op.era, op.outcome())).or_default() += 1;
    }
    Report {
        seed: profile.seed,
        seconds: profile.seconds,
        topology: cluster.topology(),
        not_recovered: faults.iter().filter(|f| f.recovered_ms.is_none()).count(),
        faults_by_kind,
        faults,
        operations,
        physical_calls: physical.values().sum(),
        attempts: history.iter().map(|o| o.attempts.len()).sum(),
        approvals: approvals.iter().filter(|a| a.status == 200).count(),
        unknown_in_store: stored.unknown,
        unsettled_in_store: stored.unsettled,
        anomalies_by_class: checker::by_class(&anomalies),
        anomalies,
        recovery_p50_ms: pct(0.5),
        recovery_p99_ms: pct(0.99),
        history,
        approvals_not_accepted: approvals.into_iter().filter(|a| a.status != 200).collect(),
    }
}

/// `switchyard audit verify` over the shared store: every replica's chain and checkpoint.
fn audit_verifies(cluster: &cluster::Cluster) -> Result<(), String> {
    let gw = cluster.replicas.iter().find_map(|r| r.gw.as_ref()).ok_or("no replica is running")?;
    let (ok, out) = gw.cli(&["audit", "verify"]);
    if ok { Ok(()) } else { Err(out) }
}

impl Report {
    /// The readable table.
    pub fn table(&self) -> String {
        let mut t = format!(
            "nemesis: seed {} · {} s · topology: {}\n\n| faults injected | count |\n|---|---|\n",
            self.seed, self.seconds, self.topology
        );
        for (k, n) in &self.faults_by_kind {
            t.push_str(&format!("| {k} | {n} |\n"));
        }
        t.push_str("\n| operations | count |\n|---|---|\n");
        for (k, n) in &self.operations {
            t.push_str(&format!("| {k} | {n} |\n"));
        }
        t.push_str(&format!(
            "| attempts | {} |\n| approvals | {} |\n| physical calls upstream | {} |\n| left unknown in the store | {} |\n\
             | unsettled after the run | {} |\n",
            self.attempts, self.approvals, self.physical_calls, self.unknown_in_store, self.unsettled_in_store
        ));
        t.push_str("\n| anomalies | count |\n|---|---|\n");
        if self.anomalies_by_class.is_empty() {
            t.push_str("| (none) | 0 |\n");
        }
        for (k, n) in &self.anomalies_by_class {
            t.push_str(&format!("| {k} | {n} |\n"));
        }
        let ms = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{v} ms"));
        t.push_str(&format!(
            "\nrecovery after a heal (every replica serving): p50 {}, p99 {}, not recovered in 30 s: {}\n",
            ms(self.recovery_p50_ms),
            ms(self.recovery_p99_ms),
            self.not_recovered
        ));
        for a in self.anomalies.iter().take(10) {
            t.push_str(&format!("  {}: {} {}\n", a.class, a.op, a.detail));
        }
        t
    }
}
