//! `switchyard connect` to a gateway whose `/mcp` takes OAuth tokens only, driven by the
//! official Python SDK's stdio client: without a login the client's request gets an error that
//! says how to log in; `--login` runs the authorization code flow against a real local issuer
//! (the test plays the browser: it opens the printed URL and follows the redirect back to the
//! loopback listener); later launches use the stored tokens, which are kept sealed (no token
//! appears in any file), and `--logout` forgets them.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::a2a::py_script;
use switchyard_tests::gateway::{Gateway, Options, free_port};
use switchyard_tests::issuer::{SERVICE_CLIENT, TestIssuer};
use switchyard_tests::mcp::UpstreamSpec;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

fn connect(url: &str, data: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut c = vec![switchyard_tests::gateway::binary().display().to_string(), "connect".into(), url.into()];
    c.extend(["--data-dir".to_string(), data.display().to_string()]);
    c.extend(extra.iter().map(|s| s.to_string()));
    c
}

/// `command` (a `connect` command line) running with its stdio piped and `env` set.
fn spawn(command: &[String], env: &[(&str, &str)]) -> tokio::process::Child {
    tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The Python SDK's stdio client launching `command`: one echo call; its answer lines and what
/// it said on stderr.
async fn echo_through(command: &[String], mode: &str) -> (Vec<Value>, String) {
    let server = format!("stdio:{}", json!(command));
    let ops = json!([["call", "echo", {"text": "hello over connect"}]]).to_string();
    let out = py_script("mcp_peer_client.py", &[&server, mode, &ops]).await;
    (switchyard_tests::a2a::lines(&out), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The client could not even start: the remote's refusal, with connect's hint, is what it says.
fn refused(seen: &[Value], said: &str) -> bool {
    seen.iter().all(|l| l["ok"] != true) && said.contains("401 Unauthorized") && said.contains("--login")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_logs_in_once_and_later_launches_use_the_sealed_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = TestIssuer::start().await;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let fixture = UpstreamSpec { prefix: Some(String::new()), ..UpstreamSpec::stdio("fx", &[]) };
    let mcp = switchyard_tests::mcp::write_config(dir.path(), &[fixture], "");
    let auth = format!(
        "[auth]\nresource = \"{url}\"\nscopes_supported = [\"mcp:call\"]\n\n\
         [[auth.issuers]]\nissuer = \"{}\"\njwks_min_refresh_ms = 0\n",
        issuer.issuer
    );
    let text = std::fs::read_to_string(&mcp).unwrap_or_default().replace("anonymous = true", "anonymous = false");
    std::fs::write(&mcp, format!("{auth}\n{text}")).unwrap();
    let _gw = Gateway::start(Options {
        data_dir: dir.path().join("gw"),
        config: Some(mcp),
        listen: Some(format!("127.0.0.1:{port}")),
        ..Options::default()
    });
    let data = dir.path().join("connect");

    // Not logged in: the request is answered with an error that says how to log in.
    let (seen, said) = echo_through(&connect(&url, &data, &[]), "2026-07-28").await;
    assert!(refused(&seen, &said), "an unauthorized request fails, saying how to log in: {seen:?}\n{said}");

    // Log in: the test is the browser.
    let mut login = spawn(
        &connect(&url, &data, &["--login", "--client-id", SERVICE_CLIENT.0]),
        &[("SWITCHYARD_CONNECT_CLIENT_SECRET", SERVICE_CLIENT.1)],
    );
    let stderr = login.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let mut err_lines = tokio::io::BufReader::new(stderr).lines();
    let mut told = Vec::new();
    let auth_url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = err_lines.next_line().await {
            told.push(line.clone());
            if let Some(u) = line.trim().strip_prefix(&format!("{}/authorize?", issuer.issuer)) {
                return Some(format!("{}/authorize?{u}", issuer.issuer));
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| panic!("no authorization URL on stderr: {told:?}"));
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap_or_default();
    let sent_back = browser.get(&auth_url).send().await.unwrap();
    let back = sent_back.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(back.starts_with("http://127.0.0.1:"), "redirected to the loopback listener: {back}");
    let landed = browser.get(&back).send().await.unwrap();
    assert_eq!(landed.status(), 200);
    let authorized = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = err_lines.next_line().await {
            if line.contains("authorized") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(authorized, "the login said it is done");
    let mut stdin = login.stdin.take().unwrap_or_else(|| panic!("stdin"));
    stdin.shutdown().await.unwrap();
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), login.wait()).await;
    assert!(status.is_ok_and(|s| s.is_ok_and(|s| s.success())), "connect ends when its client closes stdin");

    // Later launches, in both eras, use the stored tokens.
    for mode in ["2026-07-28", "legacy"] {
        let (seen, said) = echo_through(&connect(&url, &data, &[]), mode).await;
        let call = seen.iter().find(|l| l.get("op").is_some()).cloned().unwrap_or_default();
        assert_eq!(call["ok"], true, "{mode}: {seen:?}\n{said}");
        assert!(call.to_string().contains("hello over connect"), "{mode}: {call}");
    }
    // Sealed: no token the issuer gave out is in any file of the data directory.
    let issued = issuer.issued();
    assert!(!issued.is_empty());
    for entry in walk(&data) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(issued.iter().all(|t| !text.contains(t.as_str())), "{} holds a token in the clear", entry.display());
    }

    // Logged out: the next launch is refused again.
    let out = tokio::process::Command::new(switchyard_tests::gateway::binary())
        .args(&connect(&url, &data, &["--logout"])[1..])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (seen, said) = echo_through(&connect(&url, &data, &[]), "2026-07-28").await;
    assert!(refused(&seen, &said), "logged out: {seen:?}\n{said}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Lines piped in and stdin closed at once: a line that is not JSON is answered `-32700` and
/// not sent; the request after it is answered from the remote before `connect` ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_request_is_answered_before_connect_ends_and_a_bad_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = UpstreamSpec { prefix: Some(String::new()), ..UpstreamSpec::stdio("fx", &[]) };
    let config = switchyard_tests::mcp::write_config(dir.path(), &[fixture], "");
    let gw = Gateway::start(Options { data_dir: dir.path().join("gw"), config: Some(config), ..Options::default() });
    let url = format!("{}/mcp", gw.base);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}});
    let mut child = spawn(&connect(&url, &dir.path().join("c"), &[]), &[]);
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    stdin.write_all(format!("not json\n{list}\n").as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("connect did not end"))
        .unwrap();
    let answers = switchyard_tests::a2a::lines(&out);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(answers.len(), 2, "{answers:?}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(answers[0]["error"]["code"], -32700, "{answers:?}");
    let tools = answers[1]["result"]["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(answers[1]["id"], 7, "{answers:?}");
    assert!(tools.iter().any(|t| t["name"] == "echo"), "{answers:?}");
}
