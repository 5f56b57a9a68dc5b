//! `switchyard conformance`: the official MCP suites and the A2A TCK against any server, client or
//! agent — directly, through a gateway started in this process, or both side by side — with a
//! verdict, a JSON summary and an HTML report, each run kept in the store.

pub mod a2a;
pub mod gateway;
pub mod html;
pub mod mcp;
pub mod report;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use switchyard_contract::{ConformanceRun, ConformanceRuns};

pub use report::{Baseline, Leg, Outcome, Report, Status};

/// Where test tools are installed: `given`, else `$SWITCHYARD_TOOLS`, else
/// `$HOME/.cache/switchyard-tools`.
pub fn tools_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = given.or_else(|| std::env::var_os("SWITCHYARD_TOOLS").map(PathBuf::from)) {
        return Ok(dir);
    }
    let home = std::env::var_os("HOME").context("neither --tools-dir, SWITCHYARD_TOOLS nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cache/switchyard-tools"))
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub fn new_id() -> String {
    format!("run_{}", uuid::Uuid::new_v4().simple())
}

pub fn load_baseline(path: Option<&Path>) -> anyhow::Result<Option<Baseline>> {
    path.map(|p| {
        let text = std::fs::read_to_string(p).with_context(|| format!("cannot read the baseline {}", p.display()))?;
        Ok(Baseline::parse(&p.display().to_string(), &text))
    })
    .transpose()
}

/// Judges the run, writes `summary.json` and `report.html` into `out`, keeps the run in `runs`
/// and prints the table and the verdict.
pub async fn finish(report: &mut Report, out: &Path, runs: &dyn ConformanceRuns) -> anyhow::Result<()> {
    report.finished_ms = now_ms();
    report.judge();
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let summary = serde_json::to_value(&*report)?;
    std::fs::write(out.join("summary.json"), serde_json::to_vec_pretty(&summary)?)?;
    std::fs::write(out.join("report.html"), html::render(report))?;
    runs.record(&ConformanceRun {
        id: report.id.clone(),
        suite: report.suite.clone(),
        target: report.target.clone(),
        started_ms: report.started_ms,
        finished_ms: report.finished_ms,
        passed: report.passed,
        summary,
    })
    .await
    .context("cannot keep the run in the store")?;
    print!("\n{}", report.table());
    print_verdict(report);
    println!("report: {} (and summary.json)", out.join("report.html").display());
    Ok(())
}

pub fn print_verdict(report: &Report) {
    for n in &report.notes {
        println!("note: {n}");
    }
    for p in &report.problems {
        println!("problem: {p}");
    }
    let verdict = if report.passed { "PASSED" } else { "FAILED" };
    println!("{} {verdict}: run {} ({}, {} problems)", report.suite, report.id, report.kit, report.problems.len());
}
