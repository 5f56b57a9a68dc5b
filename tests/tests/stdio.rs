//! `switchyard stdio` as a desktop client launches it: the official Rust SDK (rmcp) as the client
//! on the wrapper's stdin and stdout, a FastMCP server (PyPI) as its child. The policy decides
//! each call: allowed (the child's answer), denied (a tool error with the reason, on the client's
//! own request), held until a person approves it from another terminal with the command the
//! wrapper printed (then it runs once); a child killed mid-write leaves the call `unknown`, and the
//! next call starts the child again. The store, the audit log and the CLI work on the wrapper's
//! data directory as on a gateway's.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::{ClientLifecycleMode, RequestContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use switchyard_tests::mcp::{TestClient, call, python};
use tokio::io::AsyncBufReadExt as _;

const POLICY: &str = r#"
[policy]

[[policy.rules]]
upstream = "local"
operation = "fail"
deny = true
reason = "fail is not for this desk"

[[policy.rules]]
upstream = "local"
operation = "steps"
tier = "routine"
"#;

struct Wrapper<C: ClientHandler> {
    process: tokio::process::Child,
    client: RunningService<RoleClient, C>,
    stderr: Arc<Mutex<String>>,
}

/// The person at a desktop client that asks them: answers the approval form with `approve`, and
/// keeps what it was shown.
#[derive(Clone)]
struct Desk {
    approve: bool,
    shown: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Desk {
    fn get_info(&self) -> ClientConfig {
        TestClient.get_info() // declares elicitation
    }

    async fn create_elicitation(
        &self,
        asked: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let message =
            serde_json::to_value(&asked).unwrap_or_default()["message"].as_str().unwrap_or_default().to_string();
        if let Ok(mut shown) = self.shown.lock() {
            shown.push(message);
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": self.approve})))
    }
}

/// Starts `command` (a `switchyard stdio`) with its stdin, stdout and stderr piped.
fn spawn(mut command: tokio::process::Command) -> tokio::process::Child {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    command.spawn().unwrap_or_else(|e| panic!("switchyard stdio: {e}"))
}

/// Launches `switchyard stdio` (data in `dir/d`) in front of the FastMCP peer, and connects as
/// `client`.
async fn launch<C: ClientHandler>(dir: &Path, config: &Path, client: C) -> Wrapper<C> {
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/fastmcp_peer.py");
    let mut wrapper = tokio::process::Command::new(switchyard_tests::gateway::binary());
    wrapper.arg("--config").arg(config).args(["stdio", "--data-dir"]).arg(dir.join("d"));
    wrapper.args(["--read-only", "add", "--"]).arg(python()).arg(peer);
    let mut process = spawn(wrapper);
    let (Some(stdout), Some(stdin), Some(err)) = (process.stdout.take(), process.stdin.take(), process.stderr.take())
    else {
        panic!("no pipes")
    };
    let stderr = Arc::new(Mutex::new(String::new()));
    let keep = stderr.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(err).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(mut s) = keep.lock() {
                s.push_str(&line);
                s.push('\n');
            }
        }
    });
    let connect = rmcp::service::serve_client_with_lifecycle(client, (stdout, stdin), ClientLifecycleMode::Initialize);
    let client = match tokio::time::timeout(Duration::from_secs(30), connect).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => panic!("connect: {e}: {}", text(&stderr)),
        Err(_) => panic!("no MCP session in 30 s: {}", text(&stderr)),
    };
    Wrapper { process, client, stderr }
}

fn text(s: &Mutex<String>) -> String {
    s.lock().map(|s| s.clone()).unwrap_or_default()
}

async fn tool<C: ClientHandler>(client: &RunningService<RoleClient, C>, name: &str, args: Value) -> Value {
    let result = client.peer().call_tool(call(name, args)).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::to_value(result).unwrap_or_default()
}

fn said(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

/// `switchyard` on PATH, as a person's shell has it, and the wrapper's store found by the
/// command it printed.
fn shell(line: &str) -> (bool, String) {
    let bin = switchyard_tests::gateway::binary();
    let path =
        format!("{}:{}", bin.parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default(), env("PATH"));
    let out = std::process::Command::new("sh").args(["-c", line]).env("PATH", path).output();
    let out = out.unwrap_or_else(|e| panic!("sh: {e}"));
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn env(k: &str) -> String {
    std::env::var(k).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_desktop_client_behind_switchyard_stdio_is_decided_held_and_never_told_a_lost_write_ran() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("desk.toml");
    std::fs::write(&config, POLICY).unwrap();
    // The test client declares elicitation but answers the approval form without its field:
    // no decision there, so the call waits for the terminal.
    let mut w = launch(dir.path(), &config, TestClient).await;

    // The server's own tool names, unprefixed.
    let tools = w.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for own in ["add", "greet", "fail", "steps"] {
        assert!(names.contains(&own), "{names:?}");
    }

    // Allowed: the child's answer.
    let sum = tool(&w.client, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(said(&sum), "5", "{sum}");
    assert_ne!(sum["isError"], true, "{sum}");

    // Denied: a tool result the model reads, with the policy's reason.
    let denied = tool(&w.client, "fail", json!({})).await;
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(said(&denied).contains("fail is not for this desk"), "{denied}");

    // Held: the call waits; the wrapper prints the commands that decide it; approved from another
    // terminal with exactly that command, it runs and answers the waiting client.
    let peer = w.client.peer().clone();
    let held = tokio::spawn(async move { peer.call_tool(call("greet", json!({"name": "Ada"}))).await });
    let mut approve = None;
    for _ in 0..200 {
        approve =
            text(&w.stderr).lines().map(str::trim).find(|l| l.contains(" approvals approve inv_")).map(str::to_string);
        if approve.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let approve = approve.unwrap_or_else(|| panic!("no approval command printed: {}", text(&w.stderr)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!held.is_finished(), "a held call waits for its decision");
    let (ok, out) = shell(&approve);
    assert!(ok, "{approve}: {out}");
    let greeted = tokio::time::timeout(Duration::from_secs(30), held).await;
    let greeted = greeted.unwrap_or_else(|_| panic!("the approved call did not answer: {}", text(&w.stderr)));
    let greeted = serde_json::to_value(greeted.ok().and_then(Result::ok)).unwrap_or_default();
    assert_eq!(said(&greeted), "Hello, Ada!", "{greeted}");

    // The child killed mid-write: the call's outcome is unknown (never a success, never "retry").
    let peer = w.client.peer().clone();
    let running = tokio::spawn(async move { peer.call_tool(call("steps", json!({"n": 60}))).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let wrapper = w.process.id().unwrap_or_else(|| panic!("the wrapper exited: {}", text(&w.stderr)));
    let (ok, out) = shell(&format!("pkill -9 -P {wrapper} -f fastmcp_peer.py"));
    assert!(ok, "no child to kill: {out}");
    let lost = tokio::time::timeout(Duration::from_secs(30), running).await;
    let lost = serde_json::to_value(lost.ok().and_then(Result::ok).and_then(Result::ok)).unwrap_or_default();
    assert_eq!(lost["isError"], true, "{lost}");
    assert_eq!(lost["structuredContent"]["state"], "unknown", "{lost}");
    // The next call starts the child again.
    let again = tool(&w.client, "add", json!({"a": 1, "b": 1})).await;
    assert_eq!(said(&again), "2", "{again}");

    // The client goes; the wrapper ends.
    let _ = w.client.cancel().await;
    let status = tokio::time::timeout(Duration::from_secs(20), w.process.wait()).await;
    assert!(matches!(status, Ok(Ok(s)) if s.success()), "{status:?}: {}", text(&w.stderr));

    // The store and the audit log are there for the CLI, as a gateway's are.
    let data = dir.path().join("d");
    let cli = format!("SWITCHYARD__SERVER__DATA_DIR='{}' switchyard --config '{}'", data.display(), config.display());
    let (ok, list) = shell(&format!("{cli} invocations list"));
    assert!(ok, "{list}");
    for expected in ["local/greet", "local/steps", "succeeded", "unknown"] {
        assert!(list.contains(expected), "{expected} in\n{list}");
    }
    let (ok, verified) = shell(&format!("{cli} audit verify"));
    assert!(ok, "{verified}");
}

/// A client that can ask its person: the held call is put to them as a form naming the tool and
/// its arguments; yes runs it once, no refuses it (and nothing runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_is_decided_by_the_person_at_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("desk.toml");
    std::fs::write(&config, POLICY).unwrap();
    for approve in [true, false] {
        let desk = Desk { approve, shown: Arc::default() };
        let w = launch(dir.path(), &config, desk.clone()).await;
        let name = if approve { "Ada" } else { "Bob" };
        let answer =
            tokio::time::timeout(Duration::from_secs(30), tool(&w.client, "greet", json!({"name": name}))).await;
        let answer = answer.unwrap_or_else(|_| panic!("no answer: {}", text(&w.stderr)));
        let shown = desk.shown.lock().map(|s| s.clone()).unwrap_or_default();
        assert!(shown.len() == 1 && shown[0].contains("`greet`") && shown[0].contains(name), "{shown:?}");
        if approve {
            assert_eq!(said(&answer), "Hello, Ada!", "{answer}");
        } else {
            assert_eq!(answer["isError"], true, "{answer}");
            assert!(answer.to_string().contains("approval_denied"), "{answer}");
        }
        let _ = w.client.cancel().await;
    }
}

/// Bad input from the client gets the JSON-RPC error for it, reaches nothing, and the session
/// goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_no_message_is_answered_with_its_error_and_the_session_goes_on() {
    use tokio::io::AsyncWriteExt as _;
    let dir = tempfile::tempdir().unwrap();
    let fixture = switchyard_tests::mcp::fixture_binary();
    let mut wrapper = tokio::process::Command::new(switchyard_tests::gateway::binary());
    wrapper.args(["stdio", "--data-dir"]).arg(dir.path().join("d")).arg("--").arg(fixture).arg("--stdio");
    let mut process = spawn(wrapper);
    let (Some(mut stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else { panic!("no pipes") };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let script = [
        init.to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "this is not json".into(),
        r#"{"jsonrpc": "2.0", "id": 5, "method": 7}"#.into(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    ];
    for line in script {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut answers = Vec::new();
    while answers.len() < 4 {
        let next = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
        match next {
            Ok(Ok(Some(line))) => answers.push(serde_json::from_str::<Value>(&line).unwrap_or_default()),
            other => panic!("{other:?} after {answers:?}"),
        }
    }
    assert_eq!(
        (answers[1]["id"].clone(), answers[1]["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{answers:?}"
    );
    assert_eq!(
        (answers[2]["id"].clone(), answers[2]["error"]["code"].clone()),
        (json!(5), json!(-32600)),
        "{answers:?}"
    );
    assert_eq!(answers[3]["id"], 2, "{answers:?}");
    assert!(answers[3]["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{answers:?}");
}
