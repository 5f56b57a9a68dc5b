//! The nemesis: faults scheduled from a seed, each held a while and then healed, with the time
//! every replica took to serve again.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cluster::{Cluster, LEASE_TTL_MS, LinkFault};
use crate::netns::Cut;
use crate::rng::Rng;

/// The faults the nemesis knows.
pub const KINDS: [&str; 13] = [
    "crash-db",
    "clock-skew",
    "flaky-db",
    "flaky-db-all",
    "partition-db",
    "half-open-db",
    "partition-db-all",
    "half-open-db-all",
    "partition-upstream",
    "half-open-upstream",
    "slow-links",
    "pause-past-lease",
    "kill-9",
];

#[derive(Debug, Clone, Serialize)]
pub struct Fault {
    pub kind: &'static str,
    pub replica: String,
    pub at_ms: u64,
    pub held_ms: u64,
    /// From the heal until every replica served a call again (`None`: not within 30 s).
    pub recovered_ms: Option<u64>,
}

/// Injects faults until `deadline`; the faults, in order.
pub async fn run(cluster: &mut Cluster, seed: u64, start: Instant, deadline: Instant) -> Vec<Fault> {
    let mut rng = Rng::new(seed);
    let mut faults = Vec::new();
    // `SWITCHYARD_NEMESIS_FAULTS=kind,kind…`: only those (to study one fault, or replay one).
    let only = std::env::var("SWITCHYARD_NEMESIS_FAULTS").ok();
    let kinds: Vec<&'static str> = KINDS
        .iter()
        .copied()
        .filter(|k| only.as_deref().is_none_or(|o| o.split(',').any(|x| x.trim() == *k)))
        .collect();
    assert!(!kinds.is_empty(), "SWITCHYARD_NEMESIS_FAULTS names none of {KINDS:?}");
    while Instant::now() + Duration::from_secs(4) < deadline {
        tokio::time::sleep(Duration::from_millis(800 + rng.below(1500))).await;
        let kind = kinds[rng.below(kinds.len() as u64) as usize];
        let i = rng.below(cluster.replicas.len() as u64) as usize;
        let mut held = Duration::from_millis(1000 + rng.below(2500));
        let at = Instant::now();
        let every = |f: LinkFault| (0..cluster.replicas.len()).for_each(|j| cluster.fault(j, f));
        let flaky = Cut::Resets(200 + rng.below(300) as u32);
        match kind {
            "partition-db" => cluster.fault(i, LinkFault::Db(Cut::Both)),
            "half-open-db" => cluster.fault(i, LinkFault::Db(Cut::Answers)),
            "flaky-db" => cluster.fault(i, LinkFault::Db(flaky)),
            // The database's own network: every replica at once.
            "partition-db-all" => every(LinkFault::Db(Cut::Both)),
            "half-open-db-all" => every(LinkFault::Db(Cut::Answers)),
            "flaky-db-all" => every(LinkFault::Db(flaky)),
            "partition-upstream" => cluster.fault(i, LinkFault::Upstream(Cut::Both)),
            "half-open-upstream" => cluster.fault(i, LinkFault::Upstream(Cut::Answers)),
            "slow-links" => cluster.fault(i, LinkFault::Slow(Duration::from_millis(20 + rng.below(200)))),
            // A host whose clock jumped: seconds ahead or behind (leases are the database's time).
            "clock-skew" => {
                let s = 2 + rng.below(9) as i64;
                let ahead = rng.below(2) == 0;
                if !cluster.skew(i, if ahead { s } else { -s }) {
                    continue;
                }
                held = Duration::from_secs(4 + rng.below(4));
            }
            // PostgreSQL stopped at once (immediate shutdown: a crash), started again at the heal.
            "crash-db" => cluster.pg.stop_immediately(),
            "pause-past-lease" => {
                cluster.pause(i);
                held = Duration::from_millis(LEASE_TTL_MS + 1000 + rng.below(1000));
            }
            _ => cluster.kill(i),
        }
        tokio::time::sleep(held).await;
        tokio::task::block_in_place(|| cluster.heal());
        let healed = Instant::now();
        let mut recovered = Some(Duration::ZERO);
        for j in 0..cluster.replicas.len() {
            let left = Duration::from_secs(30).saturating_sub(healed.elapsed());
            recovered = match (recovered, cluster.until_serving(j, left).await) {
                (Some(_), Some(_)) => Some(healed.elapsed()),
                _ => None,
            };
        }
        faults.push(Fault {
            kind,
            replica: if kind.ends_with("-all") { "all".into() } else { cluster.replicas[i].name.clone() },
            at_ms: at.duration_since(start).as_millis() as u64,
            held_ms: held.as_millis() as u64,
            recovered_ms: recovered.map(|d| d.as_millis() as u64),
        });
    }
    faults
}
