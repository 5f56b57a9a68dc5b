//! The system under test: PostgreSQL (a durable server of the run's own), an upstream MCP server that records every physical call
//! (the fixture's `count_write`, appending its `key` to a log before it answers), an A2A agent
//! of the official Python SDK that records every message it receives, and three
//! gateway replicas, each reaching the database and the upstream through links of its own (in
//! a network namespace of its own when the run may make one: [`crate::netns`]). The
//! policy holds a write for approval when its `delay_ms` is 200 or more (about a third of them).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchyard_tests::a2a::InternalAgent;
use switchyard_tests::fault_proxy::Target;
use switchyard_tests::gateway::{Gateway, Options, free_port};
use switchyard_tests::mcp::Fixture;

use crate::link::{Link, Mode};
use crate::netns::{Cut, Net};

/// A fault of one replica's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFault {
    /// To the database: both ways, answers only (half-open), or some connections reset (flaky,
    /// chance in a thousand).
    Db(Cut),
    /// To the upstream, likewise.
    Upstream(Cut),
    /// Both links slow by this much per chunk.
    Slow(Duration),
}

/// The A2A agent's name on every replica (`/a2a/<name>`).
pub const AGENT: &str = "internal";
/// The `tools` agent over the MCP fixture's `count_write`, on every replica.
pub const TOOLS_AGENT: &str = "tools";

/// The lease a replica holds on a call it drives: short, so a pause past it is seconds.
pub const LEASE_TTL_MS: u64 = 2000;

/// One replica and its links.
#[derive(Debug)]
pub struct Replica {
    pub name: String,
    pub base: String,
    pub opts: Options,
    pub gw: Option<Gateway>,
    /// Its link to PostgreSQL.
    pub db: Arc<Link>,
    /// Its link to the upstream.
    pub up: Arc<Link>,
    /// Whether it is stopped (`SIGSTOP`) now.
    pub paused: bool,
}

impl Replica {
    pub fn pid(&self) -> Option<u32> {
        self.gw.as_ref().map(Gateway::pid)
    }
}

/// Everything the run started; dropping it stops the processes.
#[derive(Debug)]
pub struct Cluster {
    pub dir: tempfile::TempDir,
    /// The database, directly (for the checker and the CLI).
    pub store_url: String,
    /// The upstream's record of physical calls: one key per line.
    pub call_log: PathBuf,
    pub replicas: Vec<Replica>,
    /// The replicas' namespaces, when they could be made (else the links carry every fault).
    pub net: Option<Net>,
    /// Why there are no namespaces, when there are none.
    pub no_net: Option<String>,
    /// The database server.
    pub pg: switchyard_tests::pg::Server,
    /// libfaketime, when installed: each replica's wall clock can be skewed.
    pub faketime: Option<PathBuf>,
    /// The A2A agent: its log records every message it received.
    pub agent: InternalAgent,
    _fixture: Fixture,
}

impl Cluster {
    pub async fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let call_log = dir.path().join("physical-calls.log");
        let (net, no_net) = match Net::create(3) {
            Ok(net) => (Some(net), None),
            Err(e) => (None, Some(e)),
        };
        let host: std::net::IpAddr = net.as_ref().map_or(std::net::Ipv4Addr::LOCALHOST, Net::host).into();
        // The replicas reach it through their links, by the host's address on the bridge.
        let fixture = Fixture::start(&[
            ("FIXTURE_CALL_LOG", &call_log.display().to_string()),
            ("FIXTURE_ALLOWED_HOSTS", &host.to_string()),
        ]);
        let fixture_addr = fixture.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        // An agent of the official Python A2A SDK, behind every replica's A2A face (reached at
        // the host's address directly: kills, pauses, clock skew and the database's faults
        // reach its sends; the links' faults do not).
        let agent = InternalAgent::start_on(dir.path(), &host.to_string());
        let card = format!("{}/.well-known/agent-card.json", agent.url);
        // A server of the run's own, durable, that the nemesis may crash and start again.
        let pg = switchyard_tests::pg::Server::start().unwrap_or_else(|e| panic!("PostgreSQL for the nemesis: {e}"));
        let store_url = pg.database("nemesis").unwrap_or_else(|e| panic!("{e}"));
        let (socket, db) = (pg.socket(), "nemesis");
        let faketime = ["x86_64-linux-gnu", "aarch64-linux-gnu"]
            .iter()
            .map(|arch| PathBuf::from(format!("/usr/lib/{arch}/faketime/libfaketime.so.1")))
            .find(|p| p.exists());
        let mut replicas = Vec::new();
        for n in 1..=3 {
            let name = format!("r{n}");
            let db_link = Link::start(host, Target::Unix(socket.clone())).await;
            let up_link = Link::start(host, Target::Tcp(fixture_addr.clone())).await;
            let data = dir.path().join(&name);
            std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
            let port = free_port();
            let (address, wrapper) = match &net {
                Some(net) => (net.replica(n - 1).to_string(), net.wrapper(n - 1)),
                None => ("127.0.0.1".to_string(), Vec::new()),
            };
            let config = data.join("switchyard.toml");
            std::fs::write(
                &config,
                format!(
                    "{auth}\n\n[mcp]\ncall_wait_ms = 3000\nconnect_timeout_ms = 3000\n\
                     allowed_hosts = [\"{address}\", \"{address}:{port}\"]\n\
                     request_state_key = \"switchyard-nemesis-request-state-key-0123456789\"\n\n\
                     [[mcp.upstreams]]\nname = \"fx\"\nurl = \"http://{}/mcp\"\n\
                     operations = {{ echo = \"read_only\", count_write = \"write\" }}\n\n\
                     [policy]\ngrant_key_file = {:?}\n\n\
                     [[policy.rules]]\nupstream = \"fx\"\noperation = \"count_write\"\ntier = \"routine\"\n\
                     [[policy.rules.when]]\npointer = \"/arguments/delay_ms\"\nmax = 199\n\n\
                     [[policy.rules]]\nupstream = \"demo\"\noperation = \"count\"\ntier = \"routine\"\n\
                     [[policy.rules.when]]\npointer = \"/delay_ms\"\nmax = 999\n\n\
                     [audit]\nkey_file = {:?}\ncheckpoint_interval_s = 2\n\n\
                     [a2a]\nallowed_hosts = [\"{address}\", \"{address}:{port}\"]\n\n\
                     [[a2a.agents]]\nname = \"{AGENT}\"\nkind = \"upstream\"\ncard_url = \"{card}\"\ntimeout_ms = 5000\n\n\
                     [[a2a.agents]]\nname = \"{TOOLS_AGENT}\"\nkind = \"tools\"\nupstreams = [\"fx\"]\ntools = [\"count_write\"]\n\n\
                     [[mcp.upstreams]]\nname = \"ag\"\nkind = \"a2a\"\nagent = \"{AGENT}\"\n",
                    up_link.addr,
                    dir.path().join("grant-key").display().to_string(),
                    dir.path().join("audit-key").display().to_string(),
                    auth = switchyard_tests::tenants::auth_section(),
                ),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            // The replica's wall clock reads this file's offset (seconds), re-read every second;
            // its monotonic clock is left alone, as a skewed host's is.
            let skew_file = data.join("clock-offset");
            std::fs::write(&skew_file, "+0").unwrap_or_else(|e| panic!("{e}"));
            let skew = faketime.iter().flat_map(|lib| {
                [
                    ("LD_PRELOAD", lib.display().to_string()),
                    ("FAKETIME_TIMESTAMP_FILE", skew_file.display().to_string()),
                    ("FAKETIME_CACHE_DURATION", "1".to_string()),
                    ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
                ]
            });
            let env = [
                ("SWITCHYARD__ENGINE__LEASE_TTL_MS", LEASE_TTL_MS.to_string()),
                ("SWITCHYARD__ENGINE__BACKOFF_MAX_MS", "300".to_string()),
                ("SWITCHYARD__ENGINE__RECOVERY_INTERVAL_MS", "250".to_string()),
                ("SWITCHYARD__ENGINE__ATTEMPT_TIMEOUT_MS", "5000".to_string()),
            ];
            let opts = Options {
                data_dir: data,
                store_url: Some(format!("postgres://postgres@{}/{db}?sslmode=disable", db_link.addr)),
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .chain(skew.map(|(k, v)| (k.into(), v)))
                    .collect(),
                config: Some(config),
                listen: Some(format!("{address}:{port}")),
                wrapper,
            };
            let gw = Gateway::start(opts.clone());
            replicas.push(Replica {
                name,
                base: gw.base.clone(),
                opts,
                gw: Some(gw),
                db: db_link,
                up: up_link,
                paused: false,
            });
        }
        Cluster { dir, store_url, call_log, replicas, net, no_net, pg, faketime, agent, _fixture: fixture }
    }

    /// What carries the faults.
    pub fn topology(&self) -> String {
        let clock = if self.faketime.is_some() {
            "; clocks skewed with libfaketime"
        } else {
            "; no clock skew (libfaketime is not installed: apt-get install faketime)"
        };
        let links = match (&self.net, &self.no_net) {
            (Some(_), _) => "a network namespace per replica on a bridge; partitions and half-open links are \
                             iptables rules in the replica's namespace; resets and slow links are the harness's \
                             forwarders (this kernel has no netem)"
                .to_string(),
            (None, why) => format!(
                "fault-injecting TCP forwarders of the harness's own (no network namespaces: {})",
                why.as_deref().unwrap_or("not tried")
            ),
        };
        links + clock
    }

    /// Sets replica `i`'s wall clock `seconds` off the true time (0: back to it); false when
    /// libfaketime is not installed.
    pub fn skew(&self, i: usize, seconds: i64) -> bool {
        let file = self.replicas[i].opts.data_dir.join("clock-offset");
        self.faketime.is_some() && std::fs::write(file, format!("{seconds:+}")).is_ok()
    }

    /// Injects `fault` on replica `i`'s links.
    pub fn fault(&self, i: usize, fault: LinkFault) {
        let r = &self.replicas[i];
        let (link, cut) = match fault {
            LinkFault::Slow(d) => {
                r.db.set(Mode::Slow(d));
                r.up.set(Mode::Slow(d));
                return;
            }
            LinkFault::Db(cut) => (&r.db, cut),
            LinkFault::Upstream(cut) => (&r.up, cut),
        };
        match &self.net {
            // A reset is the forwarder's in both topologies: it cuts the connection on both
            // sides, so the replica hears of it (see `Cut::Resets`).
            Some(net) if !matches!(cut, Cut::Resets(_)) => {
                net.cut(i, link.addr.port(), cut).unwrap_or_else(|e| panic!("{e}"))
            }
            _ => link.set(match cut {
                Cut::Both => Mode::Down,
                Cut::Answers => Mode::HalfOpen,
                Cut::Resets(p) => Mode::Flaky(p),
            }),
        }
    }

    /// `kill -9` replica `i` (resumed first if paused, so the kill is not delayed).
    pub fn kill(&mut self, i: usize) {
        self.resume(i);
        if let Some(mut gw) = self.replicas[i].gw.take() {
            gw.kill9();
        }
    }

    /// Starts replica `i` again on its address and data directory.
    pub fn restart(&mut self, i: usize) {
        let r = &mut self.replicas[i];
        if r.gw.is_none() {
            r.gw = Some(Gateway::start(r.opts.clone()));
        }
    }

    pub fn pause(&mut self, i: usize) {
        signal(self.replicas[i].pid(), "-STOP");
        self.replicas[i].paused = true;
    }

    pub fn resume(&mut self, i: usize) {
        if self.replicas[i].paused {
            signal(self.replicas[i].pid(), "-CONT");
            self.replicas[i].paused = false;
        }
    }

    /// Every physical call the upstreams made, by key: the MCP server's writes, and the
    /// messages the A2A agent received, by `messageId` (a send to its A2A face) and by text (a
    /// bridged MCP call, whose text is the operation's id).
    pub fn physical_calls(&self) -> std::collections::HashMap<String, usize> {
        let text = std::fs::read_to_string(&self.call_log).unwrap_or_default();
        let mut calls = std::collections::HashMap::new();
        let keys = text.lines().filter(|l| !l.is_empty()).map(str::to_string);
        let messages = self.agent.received_messages().into_iter().flat_map(|(id, text)| [id, text]);
        for key in keys.chain(messages) {
            *calls.entry(key).or_default() += 1;
        }
        calls
    }

    /// The demo upstream's physical calls on every replica: (invocation, attempt).
    pub fn demo_calls(&self) -> Vec<(String, String)> {
        let logs = self.replicas.iter().map(|r| r.opts.data_dir.join("demo-calls.log"));
        let text: String = logs.map(|p| std::fs::read_to_string(p).unwrap_or_default()).collect();
        let lines = text.lines().filter_map(|l| l.split_once(' '));
        lines.map(|(i, a)| (i.to_string(), a.to_string())).collect()
    }

    /// Heals everything: the database running, links up, every replica resumed and running.
    pub fn heal(&mut self) {
        self.pg.start_again().unwrap_or_else(|e| panic!("{e}"));
        for i in 0..self.replicas.len() {
            if let Some(net) = &self.net {
                net.heal(i).unwrap_or_else(|e| panic!("{e}"));
            }
            self.skew(i, 0);
            self.replicas[i].db.set(Mode::Up);
            self.replicas[i].up.set(Mode::Up);
            self.resume(i);
            self.restart(i);
        }
    }

    /// Waits until replica `i` answers a read through its upstream; how long that took.
    pub async fn until_serving(&self, i: usize, limit: Duration) -> Option<Duration> {
        let t0 = std::time::Instant::now();
        let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().ok()?;
        while t0.elapsed() < limit {
            let body = crate::workload::call_body("fx__echo", serde_json::json!({"text": "probe"}), None);
            if let Ok(r) = crate::workload::post(&http, &self.replicas[i].base, &body).await
                && r.contains("probe")
                && !r.contains("\"isError\":true")
            {
                return Some(t0.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }
}

fn signal(pid: Option<u32>, sig: &str) {
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill").args([sig, &pid.to_string()]).status();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.replicas.len() {
            self.resume(i);
        }
    }
}
