//! The official A2A TCK (a2aproject/a2a-tck, pinned commit), which is not on a package
//! registry: it comes from `--tck-dir`, `A2A_TCK_DIR`, the tools cache (filled by an earlier
//! clone), or a git clone of the pinned commit (`--tck-git`, `A2A_TCK_GIT`). Its own venv is made
//! from PyPI on first use. Its `compatibility.json` becomes one [`Outcome`] per requirement.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context as _, bail};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use super::report::{Outcome, Status};

/// The TCK commit the gateway is tested with (branch 1.0-dev).
pub const TCK_COMMIT: &str = "357c4a8";
const CARD_PATH: &str = "/.well-known/agent-card.json";

/// Where the TCK may come from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub dir: Option<PathBuf>,
    pub git: Option<String>,
}

/// A TCK checkout with its venv.
#[derive(Debug)]
pub struct Tck {
    dir: PathBuf,
}

/// The agent's base URL (what the TCK calls `--sut-host`) from its card URL.
pub fn base_of_card(card_url: &str) -> anyhow::Result<&str> {
    match card_url.strip_suffix(CARD_PATH) {
        Some(base) if base.starts_with("http://") || base.starts_with("https://") => Ok(base),
        _ => bail!("--card-url must be an http(s) URL ending in {CARD_PATH} (got {card_url})"),
    }
}

async fn run_quiet(cmd: &mut tokio::process::Command, what: &str) -> anyhow::Result<()> {
    let out = cmd.stdin(Stdio::null()).output().await.with_context(|| format!("cannot {what}"))?;
    if !out.status.success() {
        bail!("cannot {what} ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

impl Tck {
    pub fn kit() -> String {
        format!("a2aproject/a2a-tck@{TCK_COMMIT}")
    }

    /// Finds (or clones) the TCK and makes its venv.
    pub async fn locate(sources: &Sources, tools: &Path) -> anyhow::Result<Self> {
        let cache = tools.join(format!("a2a-tck-{TCK_COMMIT}"));
        let named = sources.dir.clone().or_else(|| std::env::var_os("A2A_TCK_DIR").map(PathBuf::from));
        let dir = match named {
            Some(dir) if dir.join("run_tck.py").is_file() => dir,
            Some(dir) => bail!(
                "{} has no run_tck.py: it must be a checkout of a2aproject/a2a-tck at {TCK_COMMIT}",
                dir.display()
            ),
            None if cache.join("run_tck.py").is_file() => cache,
            None => {
                let git = sources.git.clone().or_else(|| std::env::var("A2A_TCK_GIT").ok());
                let Some(git) = git else {
                    bail!(
                        "the A2A TCK is not on a package registry, and none was given: pass --tck-dir DIR (a checkout \
                         of a2aproject/a2a-tck at {TCK_COMMIT}) or --tck-git URL (a repository holding that commit, \
                         e.g. https://github.com/a2aproject/a2a-tck), or set A2A_TCK_DIR or A2A_TCK_GIT; a clone is \
                         kept in {}",
                        cache.display()
                    )
                };
                Self::export(&git, &cache).await?;
                cache
            }
        };
        let tck = Self { dir };
        tck.venv().await?;
        Ok(tck)
    }

    /// Exports the pinned commit of `git` (a local repository or a URL) into `cache`.
    async fn export(git: &str, cache: &Path) -> anyhow::Result<()> {
        let tmp = cache.with_extension("tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        let repo = tmp.join("repo");
        eprintln!("cloning the A2A TCK from {git} at {TCK_COMMIT} into {}", cache.display());
        run_quiet(tokio::process::Command::new("git").args(["clone", "-q", git]).arg(&repo), &format!("clone {git}"))
            .await?;
        let archive = format!(
            "git -C {} archive {TCK_COMMIT} | tar -x -C {}",
            shell_quote(&repo.to_string_lossy()),
            shell_quote(&tmp.to_string_lossy())
        );
        run_quiet(
            tokio::process::Command::new("bash").args(["-o", "pipefail", "-c", &archive]),
            &format!("export commit {TCK_COMMIT} of {git}"),
        )
        .await?;
        std::fs::remove_dir_all(&repo)?;
        let _ = std::fs::remove_dir_all(cache);
        std::fs::rename(&tmp, cache)?;
        Ok(())
    }

    async fn venv(&self) -> anyhow::Result<()> {
        let venv = self.dir.join(".venv");
        if venv.join(".switchyard-installed").exists() {
            return Ok(());
        }
        eprintln!("making the TCK's venv in {} (PyPI)", venv.display());
        run_quiet(
            tokio::process::Command::new("python3").args(["-c", "import sys; assert sys.version_info >= (3, 11)"]),
            "find python3 >= 3.11 (the TCK needs it; Debian: apt-get install python3 python3-venv)",
        )
        .await?;
        run_quiet(tokio::process::Command::new("python3").args(["-m", "venv"]).arg(&venv), "make a venv").await?;
        run_quiet(
            tokio::process::Command::new(venv.join("bin/pip")).args(["install", "-q", "-e"]).arg(&self.dir),
            "install the TCK's dependencies from PyPI",
        )
        .await?;
        std::fs::write(venv.join(".switchyard-installed"), TCK_COMMIT)?;
        Ok(())
    }

    /// Runs the TCK against the agent at `base`, its output and reports under `out`; one
    /// progress line per block of tests. Requirements at `level` (default MUST) score.
    pub async fn run(
        &self,
        base: &str,
        level: Option<&str>,
        transports: Option<&str>,
        label: &str,
        out: &Path,
    ) -> anyhow::Result<Vec<Outcome>> {
        let reports = self.dir.join("reports");
        let _ = std::fs::remove_dir_all(&reports);
        let _ = std::fs::remove_dir_all(out);
        std::fs::create_dir_all(out)?;
        let mut cmd = tokio::process::Command::new(self.dir.join(".venv/bin/python"));
        cmd.arg("run_tck.py").args(["--sut-host", base]);
        if let Some(level) = level {
            cmd.args(["--level", level]);
        }
        if let Some(t) = transports {
            cmd.args(["--transport", t]);
        }
        cmd.args(["--", "--webhook-host", "127.0.0.1"]);
        let mut child = cmd
            .current_dir(&self.dir)
            // Progress as it happens: Python buffers a pipe otherwise.
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the TCK")?;
        let mut log = tokio::fs::File::create(out.join("tck-output.txt")).await?;
        let stderr = child.stderr.take().map(|mut e| {
            tokio::spawn(async move {
                let mut text = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut e, &mut text).await;
                text
            })
        });
        if let Some(stdout) = child.stdout.take() {
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.write_all(line.as_bytes()).await?;
                log.write_all(b"\n").await?;
                // pytest's progress lines: one mark per test (`.` passed, `F`/`E` failed, `s`
                // skipped, `x` expected failure), then the share done, e.g. `[ 27%]`.
                if let Some((marks, done)) = line.trim_end().strip_suffix("%]").and_then(|l| l.rsplit_once('[')) {
                    let count = |set: &str| marks.chars().filter(|c| set.contains(*c)).count();
                    println!(
                        "  [{label}] tck {:>3}%: {} tests, {} failed, {} skipped",
                        done.trim(),
                        count(".FEsx"),
                        count("FE"),
                        count("s")
                    );
                }
            }
        }
        let status = child.wait().await?;
        if let Some(e) = stderr {
            let text = e.await.unwrap_or_default();
            log.write_all(text.as_bytes()).await?;
        }
        log.flush().await?;
        for f in ["compatibility.json", "compatibility.html", "tck_report.html", "junitreport.xml"] {
            let _ = std::fs::copy(reports.join(f), out.join(f));
        }
        let text = std::fs::read_to_string(out.join("compatibility.json")).with_context(|| {
            format!(
                "the TCK ({status}) wrote no compatibility.json; its output: {}",
                out.join("tck-output.txt").display()
            )
        })?;
        let scored = level.map_or_else(|| "MUST".to_string(), str::to_uppercase);
        parse_compatibility(&text, &scored)
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[derive(Debug, Deserialize)]
struct Compatibility {
    per_requirement: BTreeMap<String, Requirement>,
}

#[derive(Debug, Deserialize)]
struct Requirement {
    level: String,
    status: String,
    #[serde(default)]
    transports: BTreeMap<String, String>,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

/// One outcome per requirement; those at level `scored` score.
fn parse_compatibility(text: &str, scored: &str) -> anyhow::Result<Vec<Outcome>> {
    let report: Compatibility = serde_json::from_str(text).context("the TCK's compatibility.json")?;
    Ok(report
        .per_requirement
        .into_iter()
        .map(|(id, r)| {
            let count = |s: &str| u32::try_from(r.transports.values().filter(|v| v.as_str() == s).count()).unwrap_or(0);
            let status = match r.status.as_str() {
                "PASS" => Status::Pass,
                "FAIL" => Status::Fail,
                _ => Status::Skip,
            };
            let failures = r.errors.iter().map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string)).collect();
            Outcome {
                set: "tck".into(),
                name: id,
                scored: r.level == scored,
                level: Some(r.level),
                status,
                passed: count("PASS"),
                failed: count("FAIL"),
                warnings: 0,
                failures,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_base_comes_from_its_card_url() {
        assert_eq!(
            base_of_card("http://127.0.0.1:9/a2a/x/.well-known/agent-card.json").ok(),
            Some("http://127.0.0.1:9/a2a/x")
        );
        assert!(base_of_card("http://127.0.0.1:9/card.json").is_err());
        assert!(base_of_card("file:///.well-known/agent-card.json").is_err());
    }

    #[test]
    fn requirements_score_at_their_level() {
        let text = r#"{"per_requirement": {
            "CARD-DISC-001": {"level": "MUST", "status": "PASS", "transports": {"jsonrpc": "PASS", "grpc": "PASS"}, "errors": []},
            "CORE-SEND-009": {"level": "MUST", "status": "FAIL", "transports": {"jsonrpc": "FAIL", "grpc": "PASS"}, "errors": ["jsonrpc: wrong code"]},
            "STREAM-002": {"level": "SHOULD", "status": "NOT TESTED", "transports": {}, "errors": []}
        }}"#;
        let o = parse_compatibility(text, "MUST").unwrap_or_default();
        let view: Vec<_> = o.iter().map(|o| (o.name.as_str(), o.scored, o.status, o.cell())).collect();
        assert_eq!(
            view,
            [
                ("CARD-DISC-001", true, Status::Pass, "pass 2".to_string()),
                ("CORE-SEND-009", true, Status::Fail, "FAIL 1/2".to_string()),
                ("STREAM-002", false, Status::Skip, "skip".to_string()),
            ]
        );
        assert_eq!(o.get(1).map(|o| o.failures.clone()), Some(vec!["jsonrpc: wrong code".to_string()]));
    }
}
