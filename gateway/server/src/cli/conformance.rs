//! `switchyard conformance`: run the official protocol test kits against a server, a client or
//! an agent, directly and through the gateway, and list past runs.

use std::path::PathBuf;

use anyhow::bail;
use switchyard_contract::iso8601;

use crate::config::Config;
use crate::conformance::a2a::{Sources, Tck, base_of_card};
use crate::conformance::gateway::{Gateway, quoted};
use crate::conformance::mcp::{REQUIREMENTS, Runner, Selection, Side};
use crate::conformance::{self, Leg, Report};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run the official MCP server suite against an MCP server (Streamable HTTP).
    McpServer(McpServer),
    /// Run the official MCP client suite against a client command (the suite appends the URL
    /// of each scenario's server to it).
    McpClient(McpClient),
    /// Run the official A2A TCK against an agent.
    A2a(A2a),
    /// Past runs, newest first.
    List {
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// One past run: its table and verdict (`--json`: its whole summary).
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
}

/// How a run is set up and judged.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// Only through the gateway: one started in this process on 127.0.0.1 with a temporary
    /// SQLite store, fronting the target as an upstream.
    #[arg(long)]
    through_gateway: bool,
    /// Both, directly and through the gateway, side by side: anything that passes directly but
    /// fails through the gateway fails the run.
    #[arg(long, conflicts_with = "through_gateway")]
    compare: bool,
    /// Accepted failures, one name per line (`#` comments), for the last leg (through the
    /// gateway, when comparing); `direct:<name>` lines for the direct leg. In a leg it covers,
    /// any failure it does not list fails the run (scored or not), and so does a listed one
    /// that passes.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Where reports go (default: <data_dir>/conformance/<run id>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A TOML `key = value` line added to the gateway's upstream entry (`[[upstreams]]`, kind `mcp` or
    /// `[[a2a.agents]]`), e.g. `operations = { greet = "read_only" }`. Repeatable.
    #[arg(long = "upstream-toml", value_name = "LINE")]
    upstream_toml: Vec<String>,
    /// Where the suites are installed (default: $SWITCHYARD_TOOLS, else ~/.cache/switchyard-tools).
    #[arg(long)]
    tools_dir: Option<PathBuf>,
}

impl Common {
    fn legs(&self) -> (bool, bool) {
        (!self.through_gateway || self.compare, self.through_gateway || self.compare)
    }
}

#[derive(Debug, clap::Args)]
pub struct McpServer {
    /// The server's MCP endpoint, e.g. http://127.0.0.1:8001/mcp.
    #[arg(long)]
    url: String,
    /// Requirement sets to run (default: both).
    #[arg(long, value_parser = REQUIREMENTS)]
    requirements: Vec<String>,
    /// Run these scenarios only, each scored (extension scenarios run only when named).
    #[arg(long)]
    scenario: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct McpClient {
    #[arg(long, value_parser = REQUIREMENTS)]
    requirements: Vec<String>,
    #[arg(long)]
    scenario: Vec<String>,
    #[arg(long)]
    baseline: Option<PathBuf>,
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long)]
    tools_dir: Option<PathBuf>,
    /// The client command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct A2a {
    /// The agent's card, e.g. http://127.0.0.1:9999/.well-known/agent-card.json.
    #[arg(long)]
    card_url: String,
    /// A checkout of a2aproject/a2a-tck at the pinned commit (else $A2A_TCK_DIR, the tools cache).
    #[arg(long)]
    tck_dir: Option<PathBuf>,
    /// A git repository or URL holding the pinned commit, cloned into the tools cache.
    #[arg(long, conflicts_with = "tck_dir")]
    tck_git: Option<String>,
    /// Run only this level's requirements (and score them); default: every level, MUST scored.
    #[arg(long, value_parser = ["must", "should", "may"])]
    level: Option<String>,
    /// Transports, comma-separated: jsonrpc, http_json, grpc (default: all).
    #[arg(long)]
    transports: Option<String>,
    #[command(flatten)]
    common: Common,
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    match cmd {
        Command::McpServer(args) => mcp_server(args, cfg).await,
        Command::McpClient(args) => mcp_client(args, cfg).await,
        Command::A2a(args) => a2a(args, cfg).await,
        Command::List { limit } => list(limit, cfg).await,
        Command::Show { id, json } => show(&id, json, cfg).await,
    }
}

fn report(suite: &str, kit: String, target: &str, baseline: Option<&std::path::Path>) -> anyhow::Result<Report> {
    Ok(Report {
        id: conformance::new_id(),
        suite: suite.into(),
        kit,
        target: target.into(),
        started_ms: conformance::now_ms(),
        finished_ms: 0,
        legs: Vec::new(),
        baseline: conformance::load_baseline(baseline)?,
        problems: Vec::new(),
        notes: Vec::new(),
        passed: false,
    })
}

/// Keeps the run and fails the command when the run failed.
async fn conclude(mut report: Report, out: PathBuf, cfg: &Config) -> anyhow::Result<()> {
    let stores = super::open_store(cfg).await?;
    conformance::finish(&mut report, &out, stores.conformance.as_ref()).await?;
    if !report.passed {
        bail!("the run failed ({} problems; report in {})", report.problems.len(), out.display());
    }
    Ok(())
}

/// Where a run's reports go: `--out`, else `<data_dir>/conformance/<run id>`.
fn scratch(out: Option<&PathBuf>, cfg: &Config, id: &str) -> PathBuf {
    out.cloned().unwrap_or_else(|| cfg.server.data_dir.join("conformance").join(id))
}

/// `sections` with the `--upstream-toml` lines added to its last table (the upstream entry).
fn with_lines(mut sections: String, lines: &[String]) -> String {
    for line in lines {
        sections.push_str(line);
        sections.push('\n');
    }
    sections
}

async fn mcp_server(args: McpServer, cfg: &Config) -> anyhow::Result<()> {
    if !(args.url.starts_with("http://") || args.url.starts_with("https://")) {
        bail!("--url must start with http:// or https:// (got {})", args.url);
    }
    let c = &args.common;
    let runner = Runner::ensure(&conformance::tools_dir(c.tools_dir.clone())?).await?;
    let selection = Selection::of(args.requirements, args.scenario);
    let mut report = report("mcp-server", Runner::kit(), &args.url, c.baseline.as_deref())?;
    let out = scratch(c.out.as_ref(), cfg, &report.id);
    let (direct, through) = c.legs();
    println!("{} ({}) against {}", report.kit, report.id, args.url);
    if direct {
        println!("== direct: {}", args.url);
        let outcomes = runner.run(Side::Server, &args.url, &selection, "direct", &out.join("direct")).await?;
        report.legs.push(Leg { label: "direct".into(), target: args.url.clone(), outcomes });
    }
    if through {
        let sections = format!(
            "[mcp]\nanonymous = true\nrequest_state_key = {}\n\n[[upstreams]]\nkind = \"mcp\"\nname = \"target\"\nurl = {}\nprefix = \"\"\n",
            quoted(&format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())),
            quoted(&args.url)
        );
        let sections = with_lines(sections, &c.upstream_toml);
        let gateway = Gateway::start(&sections, &out.join("gateway.log")).await?;
        let endpoint = format!("{}/mcp", gateway.base);
        println!("== through gateway: {endpoint} -> {}", args.url);
        let outcomes = runner.run(Side::Server, &endpoint, &selection, "through gateway", &out.join("gateway")).await;
        if let Err(e) = gateway.stop().await {
            eprintln!("warning: the gateway did not stop cleanly: {e:#}");
        }
        report.legs.push(Leg { label: "through gateway".into(), target: endpoint, outcomes: outcomes? });
    }
    conclude(report, out, cfg).await
}

async fn mcp_client(args: McpClient, cfg: &Config) -> anyhow::Result<()> {
    let runner = Runner::ensure(&conformance::tools_dir(args.tools_dir.clone())?).await?;
    let selection = Selection::of(args.requirements, args.scenario);
    // The runner runs the command through a shell, appending the URL.
    let command = args.command.iter().map(|a| shell_word(a)).collect::<Vec<_>>().join(" ");
    let mut report = report("mcp-client", Runner::kit(), &command, args.baseline.as_deref())?;
    let out = scratch(args.out.as_ref(), cfg, &report.id);
    println!("{} ({}) driving {command}", report.kit, report.id);
    let outcomes = runner.run(Side::Client, &command, &selection, "client", &out.join("client")).await?;
    report.legs.push(Leg { label: "client".into(), target: command.clone(), outcomes });
    conclude(report, out, cfg).await
}

fn shell_word(s: &str) -> String {
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain { s.to_string() } else { format!("'{}'", s.replace('\'', "'\\''")) }
}

async fn a2a(args: A2a, cfg: &Config) -> anyhow::Result<()> {
    let base = base_of_card(&args.card_url)?.to_string();
    let c = &args.common;
    let tools = conformance::tools_dir(c.tools_dir.clone())?;
    let tck = Tck::locate(&Sources { dir: args.tck_dir.clone(), git: args.tck_git.clone() }, &tools).await?;
    let mut report = report("a2a", Tck::kit(), &args.card_url, c.baseline.as_deref())?;
    let out = scratch(c.out.as_ref(), cfg, &report.id);
    let (direct, through) = c.legs();
    let (level, transports) = (args.level.as_deref(), args.transports.as_deref());
    println!("{} ({}) against {}", report.kit, report.id, args.card_url);
    if direct {
        println!("== direct: {base}");
        let outcomes = tck.run(&base, level, transports, "direct", &out.join("direct")).await?;
        report.legs.push(Leg { label: "direct".into(), target: base.clone(), outcomes });
    }
    if through {
        // The TCK's error table (A2A 1.0.0), webhooks to its receiver on loopback.
        let sections = format!(
            "[a2a]\nerror_profile = \"tck\"\nanonymous = true\npush = {{ allow_loopback = true }}\n\n\
             [[upstreams]]\nkind = \"a2a\"\nname = \"target\"\ncard_url = {}\n",
            quoted(&args.card_url)
        );
        let sections = with_lines(sections, &c.upstream_toml);
        let gateway = Gateway::start(&sections, &out.join("gateway.log")).await?;
        // The first agent is also served at the root (its card, JSON-RPC, gRPC).
        let endpoint = gateway.base.clone();
        println!("== through gateway: {endpoint} -> {base}");
        let outcomes = tck.run(&endpoint, level, transports, "through gateway", &out.join("gateway")).await;
        if let Err(e) = gateway.stop().await {
            eprintln!("warning: the gateway did not stop cleanly: {e:#}");
        }
        report.legs.push(Leg { label: "through gateway".into(), target: endpoint, outcomes: outcomes? });
    }
    conclude(report, out, cfg).await
}

async fn list(limit: u32, cfg: &Config) -> anyhow::Result<()> {
    let stores = super::open_store(cfg).await?;
    let runs = stores.conformance.list(limit.clamp(1, 1000)).await?;
    if runs.is_empty() {
        println!("no conformance runs kept in {}", switchyard_store::redact_url(&cfg.store_url()));
        return Ok(());
    }
    println!("{:<37} {:<24} {:<11} {:<7} {:>7}  target", "id", "started", "suite", "verdict", "seconds");
    for r in runs {
        println!(
            "{:<37} {:<24} {:<11} {:<7} {:>7.1}  {}",
            r.id,
            iso8601(r.started_ms),
            r.suite,
            if r.passed { "passed" } else { "FAILED" },
            (r.finished_ms - r.started_ms) as f64 / 1000.0,
            r.target
        );
    }
    Ok(())
}

async fn show(id: &str, json: bool, cfg: &Config) -> anyhow::Result<()> {
    let stores = super::open_store(cfg).await?;
    let Some(run) = stores.conformance.get(id).await? else {
        bail!("no conformance run {id} (see `switchyard conformance list`)");
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&run.summary)?);
        return Ok(());
    }
    let report: Report = serde_json::from_value(run.summary)?;
    println!("{} ({}) against {}, started {}", report.kit, report.id, report.target, iso8601(report.started_ms));
    print!("{}", report.table());
    conformance::print_verdict(&report);
    Ok(())
}
