//! Runs the real `switchyard` binary on `127.0.0.1:0` and talks to its admin API.
//!
//! The binary is `$SWITCHYARD_BIN`, else `switchyard` next to the test executable's
//! directory (`target/<profile>/`), so `cargo build -p switchyard` must run first (the test
//! command does).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The admin token the harness configures.
pub const TOKEN: &str = "switchyard-test-token-0123456789";

/// Where the gateway binary is.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("SWITCHYARD_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or_else(|| panic!("unexpected test path {exe:?}"));
    let bin = profile_dir.join("switchyard");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p switchyard` first (or set SWITCHYARD_BIN)",
        bin.display()
    );
    bin
}

/// How to start a gateway.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub data_dir: PathBuf,
    /// `None`: SQLite under the data dir.
    pub store_url: Option<String>,
    /// Extra environment, e.g. `SWITCHYARD__ENGINE__LEASE_TTL_MS`.
    pub env: Vec<(String, String)>,
    pub config: Option<PathBuf>,
    /// Listen address; default `127.0.0.1:0`.
    pub listen: Option<String>,
    /// A command the binary runs under (e.g. `ip netns exec <ns>`, which execs it: the child's
    /// pid is still the gateway's).
    pub wrapper: Vec<String>,
}

/// A running gateway process. Dropping it kills the process.
#[derive(Debug)]
pub struct Gateway {
    child: Child,
    pub base: String,
    pub http: reqwest::Client,
    pub opts: Options,
    /// How long from spawn until it printed its ready line.
    pub started_in: Duration,
}

impl Gateway {
    /// Starts the binary and waits (up to 20 s) for its ready line.
    pub fn start(opts: Options) -> Gateway {
        std::fs::create_dir_all(&opts.data_dir).unwrap_or_else(|e| panic!("data dir: {e}"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(opts.data_dir.join("gateway.log"))
            .unwrap_or_else(|e| panic!("log file: {e}"));
        let mut cmd = match opts.wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(binary());
                c
            }
            None => Command::new(binary()),
        };
        if let Some(c) = &opts.config {
            cmd.arg("--config").arg(c);
        }
        cmd.args(["serve", "--listen", opts.listen.as_deref().unwrap_or("127.0.0.1:0"), "--data-dir"])
            .arg(&opts.data_dir)
            .env("SWITCHYARD__ADMIN__TOKEN", TOKEN)
            .env_remove("SWITCHYARD_FAULT_PAUSE")
            .env_remove("SWITCHYARD_STORE_URL")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        if let Some(url) = &opts.store_url {
            cmd.env("SWITCHYARD_STORE_URL", url);
        }
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        let t0 = Instant::now();
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", binary().display()));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("switchyard ready: listening on ") {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let base = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(base) => base,
            Err(_) => {
                let _ = child.kill();
                let log = std::fs::read_to_string(opts.data_dir.join("gateway.log")).unwrap_or_default();
                panic!("gateway did not become ready in 20 s; log:\n{log}");
            }
        };
        Gateway { child, base, http: reqwest::Client::new(), opts, started_in: t0.elapsed() }
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the process to exit; returns whether it exited successfully.
    pub fn terminate(&mut self) -> bool {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CPU time the gateway process has used so far (user + system, from `/proc`, whose
    /// ticks are USER_HZ = 100 per second on Linux).
    pub fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start at its closing parenthesis.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<u64> = after.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect();
        // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
        let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
        Duration::from_millis(ticks * 10)
    }

    fn req(&self, method: reqwest::Method, path: &str, tenant: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .header("x-switchyard-tenant", tenant)
            .timeout(Duration::from_secs(70))
    }

    /// `POST /admin/v1/invocations`; returns status and JSON body.
    pub async fn submit(
        &self,
        tenant: &str,
        op: &str,
        request: Value,
        key: Option<&str>,
        wait_ms: u64,
    ) -> reqwest::Result<(u16, Value)> {
        let body = json!({"upstream": "demo", "operation": op, "request": request, "idempotency_key": key});
        let resp = self
            .req(reqwest::Method::POST, &format!("/admin/v1/invocations?wait_ms={wait_ms}"), tenant)
            .json(&body)
            .send()
            .await?;
        let status = resp.status().as_u16();
        Ok((status, resp.json().await.unwrap_or(Value::Null)))
    }

    /// `GET` an admin path; returns status and JSON body.
    pub async fn get(&self, tenant: &str, path: &str) -> reqwest::Result<(u16, Value)> {
        let resp = self.req(reqwest::Method::GET, path, tenant).send().await?;
        let status = resp.status().as_u16();
        Ok((status, resp.json().await.unwrap_or(Value::Null)))
    }

    /// `POST` an admin path with a JSON body.
    pub async fn post(&self, tenant: &str, path: &str, body: Value) -> reqwest::Result<(u16, Value)> {
        let resp = self.req(reqwest::Method::POST, path, tenant).json(&body).send().await?;
        let status = resp.status().as_u16();
        Ok((status, resp.json().await.unwrap_or(Value::Null)))
    }

    /// Every invocation of `tenant` (follows pagination).
    pub async fn all(&self, tenant: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/admin/v1/invocations?limit=500&cursor={c}"),
                None => "/admin/v1/invocations?limit=500".to_string(),
            };
            let (status, page) = self.get(tenant, &path).await.unwrap_or_else(|e| panic!("list: {e}"));
            assert_eq!(status, 200, "{page}");
            out.extend(page["items"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return out,
            }
        }
    }

    /// Every invocation of `tenant` once none is running (admitted, dispatching, retrying), for
    /// up to 5 s: an MCP read, and a run whose upstream recorded its answer (an A2A agent's ended
    /// task), is answered before its outcome commits.
    pub async fn all_settled(&self, tenant: &str) -> Vec<Value> {
        let running = |i: &Value| matches!(i["state"]["state"].as_str(), Some("admitted" | "dispatching" | "retrying"));
        for _ in 0..100 {
            let all = self.all(tenant).await;
            if !all.iter().any(running) {
                return all;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        self.all(tenant).await
    }

    /// Signs in to the console with `form` (the sign-in form's fields, URL-encoded) and returns
    /// the session's `Cookie` header.
    pub async fn console_sign_in(&self, form: &str) -> String {
        let login = no_redirects()
            .post(format!("{}/console/login", self.base))
            .header("origin", &self.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("console sign-in: {e}"));
        assert_eq!(login.status().as_u16(), 303, "console sign-in");
        let cookie = login.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default();
        cookie.split(';').next().unwrap_or_default().to_string()
    }

    /// A console page (`path`) with the session `cookie`: (status, HTML).
    pub async fn console_page(&self, cookie: &str, path: &str) -> (u16, String) {
        let page = no_redirects()
            .get(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = page.status().as_u16();
        (status, page.text().await.unwrap_or_default())
    }

    /// A console page (`path`) as the operator signed in for `tenant`: (status, HTML).
    pub async fn console(&self, tenant: &str, path: &str) -> (u16, String) {
        let cookie = self.console_sign_in(&format!("token={TOKEN}&tenant={tenant}&name=operator")).await;
        self.console_page(&cookie, path).await
    }

    /// `switchyard grants mint --subject <subject> --ceiling sensitive <more>`: the grant token.
    pub fn mint_grant(&self, subject: &str, more: &[&str]) -> String {
        let mut args = vec!["grants", "mint", "--subject", subject, "--ceiling", "sensitive"];
        args.extend_from_slice(more);
        let (ok, out) = self.cli(&args);
        assert!(ok, "grants mint: {out}");
        out.lines().next().unwrap_or_default().to_string()
    }

    /// Runs a `switchyard` CLI command against the same store; returns (success, stdout+stderr).
    pub fn cli(&self, args: &[&str]) -> (bool, String) {
        let mut cmd = Command::new(binary());
        if let Some(c) = &self.opts.config {
            cmd.arg("--config").arg(c);
        }
        let url = self
            .opts
            .store_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}/switchyard.db", self.opts.data_dir.display()));
        let out = cmd
            .args(args)
            .env("SWITCHYARD__STORE__URL", url)
            .env("SWITCHYARD__SERVER__DATA_DIR", &self.opts.data_dir)
            .output()
            .unwrap_or_else(|e| panic!("cli: {e}"));
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap_or_else(|e| panic!("{e}"))
}

/// A loopback port that was free a moment ago (for configs that must name their own URL).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// Lines of the demo upstream's call log: `(invocation id, attempt id)`.
pub fn call_log(data_dir: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(data_dir.join("demo-calls.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())))
        .collect()
}
