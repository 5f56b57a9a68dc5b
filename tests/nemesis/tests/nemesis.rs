//! The nemesis in the test command (short profile): three replicas under random faults from a
//! printed seed; every anomaly class must be empty. `tests/nemesis/run.sh --minutes N` runs the
//! long profile. Set `SWITCHYARD_NEMESIS_SEED` to replay a run, `SWITCHYARD_NEMESIS_SECONDS`
//! for its length, `SWITCHYARD_NEMESIS_FAULTS` (comma-separated kinds) to inject only those,
//! `SWITCHYARD_NEMESIS_OUT` for where the report goes, `SWITCHYARD_NEMESIS_KEEP` to keep the
//! replicas' data and logs.

use switchyard_nemesis::{Profile, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_under_faults_lose_nothing_and_run_nothing_twice() {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let seed = env("SWITCHYARD_NEMESIS_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let seconds = env("SWITCHYARD_NEMESIS_SECONDS").unwrap_or(60);
    eprintln!("nemesis seed {seed} ({seconds} s): replay with SWITCHYARD_NEMESIS_SEED={seed}");
    let report = run(Profile { seconds, seed, clients: 6 }).await;
    let table = report.table();
    eprintln!("{table}");
    if let Ok(dir) = std::env::var("SWITCHYARD_NEMESIS_OUT") {
        let dir = std::path::Path::new(&dir);
        std::fs::create_dir_all(dir).unwrap();
        let json = serde_json::to_string_pretty(&report).unwrap();
        std::fs::write(dir.join("nemesis.json"), json).unwrap();
        std::fs::write(dir.join("nemesis.md"), &table).unwrap();
    }
    assert!(!report.faults.is_empty(), "no fault was injected");
    let succeeded = report.history.iter().filter(|o| o.outcome() == "succeeded").count();
    assert!(succeeded * 2 >= report.history.len(), "most operations must succeed:\n{table}");
    assert!(report.anomalies.is_empty(), "seed {seed}: anomalies\n{table}");
}
