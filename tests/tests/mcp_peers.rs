//! MCP servers and clients that no one here wrote, directly and through the gateway: the
//! reference `@modelcontextprotocol/server-everything` (npm, 2025-11-25) and a FastMCP server
//! (PyPI), both over stdio behind the gateway, driven by the official Python SDK (mcp 2.3.0) as a
//! 2026-07-28 and as a legacy client and by the official TypeScript SDK v2 (2026-07-28) and v1
//! (2025-11-25); each answer (and the tool list, in order) must be what the same client gets
//! directly.

use std::path::PathBuf;

use serde_json::{Value, json};
use switchyard_tests::a2a::{lines, py_script};
use switchyard_tests::gateway::{Gateway, Options};

/// The command that runs server-everything over stdio (installed from npm into the tools cache's
/// `mcp-peers` by scripts/test.sh, or `SWITCHYARD_MCP_PEERS`).
fn server_everything() -> Vec<String> {
    let package = "@modelcontextprotocol/server-everything";
    let dir = switchyard_tests::node::packages("SWITCHYARD_MCP_PEERS", "mcp-peers", package);
    let script = dir.join("node_modules").join(package).join("dist/index.js");
    vec![switchyard_tests::node::node(), script.display().to_string(), "stdio".into()]
}

/// The tool names the SDK listed, in order.
fn listed(out: &std::process::Output) -> Value {
    lines(out).into_iter().find_map(|l| l.get("tools").cloned()).unwrap_or(Value::Null)
}

/// Writes a gateway config with one stdio upstream `name` (no prefix) running `shell` under
/// `sh -c`, its `read_only` tools listed.
fn config_with(dir: &std::path::Path, name: &str, shell: String, read_only: &[&str]) -> PathBuf {
    let ops: Vec<String> =
        read_only.iter().map(|t| format!("{} = \"read_only\"", Value::String((*t).into()))).collect();
    let config = dir.join("peers.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\nanonymous = true\nconnect_timeout_ms = 20000\n\
             request_state_key = \"switchyard-test-request-state-key-0123456789\"\n\n\
             [[mcp.upstreams]]\nname = \"{name}\"\nprefix = \"\"\ncommand = [\"sh\", \"-c\", {}]\n\
             operations = {{ {} }}\n",
            Value::String(shell),
            ops.join(", ")
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    config
}

/// `command`, quoted for `sh -c`.
fn quoted(command: &[String]) -> String {
    command.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ")
}

/// What the SDK made of each call: `(ok, content)` per call, in order.
fn answers(out: &std::process::Output) -> Vec<(bool, Value)> {
    lines(out)
        .into_iter()
        .filter(|l| l.get("call").is_some())
        .map(|l| (l["ok"] == true, if l["ok"] == true { l["result"]["content"].clone() } else { l["error"].clone() }))
        .collect()
}

const CALLS: &str = r#"[["echo", {"message": "hi"}], ["get-sum", {"a": 2, "b": 3}]]"#;

/// The third-party clients: the Python SDK in both eras, the TypeScript SDK v2 (2026-07-28) and
/// v1 (2025-11-25); each with the client whose direct answers it is compared with (the Python
/// SDK's 2026-07-28 mode does not fall back to a legacy stdio server, so its own legacy mode is
/// its baseline — what the gateway translates is exactly that difference).
const CLIENTS: [(&str, &str); 4] = [
    ("python 2026-07-28", "python legacy"),
    ("python legacy", "python legacy"),
    ("ts v2", "ts v2"),
    ("ts v1", "ts v1"),
];

/// Runs `client` against `server` (a URL, or `stdio:` and the command as JSON) with `calls`.
async fn run(client: &str, server: &str, calls: &str) -> std::process::Output {
    match client.split_once(' ') {
        Some(("python", mode)) => py_script("mcp_peer_client.py", &[server, mode, calls]).await,
        Some(("ts", sdk)) => {
            let package = if sdk == "v2" { "@modelcontextprotocol/client" } else { "@modelcontextprotocol/sdk" };
            switchyard_tests::node::run(
                "SWITCHYARD_MCP_PEERS",
                "mcp-peers",
                package,
                "mcp_client.mjs",
                &[sdk, server, calls],
            )
            .await
        }
        _ => panic!("unknown client {client}"),
    }
}

/// Each client sees `url` (the gateway) as it sees `command` directly: the same answers, and its
/// own tools, in the upstream's order, among those listed (server-everything adds tools for the
/// client capabilities it sees — roots, sampling, elicitation — which the gateway declares).
async fn same_as_direct(url: &str, command: &[String], calls: &str, expected: usize) {
    let stdio = format!("stdio:{}", json!(command));
    for (client, baseline) in CLIENTS {
        let direct_out = run(baseline, &stdio, calls).await;
        let direct = answers(&direct_out);
        assert_eq!(
            direct.len(),
            expected,
            "{client} directly: {direct:?}\n{}",
            String::from_utf8_lossy(&direct_out.stderr)
        );
        let out = run(client, url, calls).await;
        let through = answers(&out);
        assert_eq!(
            through,
            direct,
            "{client} through the gateway vs directly\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (all, own) = (listed(&out), listed(&direct_out));
        let all: Vec<&Value> = all.as_array().map(|a| a.iter().collect()).unwrap_or_default();
        let mut rest = all.iter();
        let in_order = own.as_array().is_some_and(|o| o.iter().all(|t| rest.any(|a| *a == t)));
        assert!(in_order, "{client}: {own} should appear, in order, in {all:?}");
        // Objects keep the upstream's key order (a form's fields, a schema's properties).
        if let Some(direct_props) = property_order(&direct_out) {
            let through_props = property_order(&out).unwrap_or_default();
            for (tool, keys) in direct_props {
                assert_eq!(through_props.get(&tool), Some(&keys), "{client}: the properties of {tool}, in order");
            }
        }
    }
}

/// Each tool's input schema property names in order, as the TypeScript client printed them.
fn property_order(out: &std::process::Output) -> Option<serde_json::Map<String, Value>> {
    lines(out).into_iter().find_map(|l| l.get("properties").and_then(Value::as_object).cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_reference_server_behind_the_gateway_answers_both_client_eras_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let command = server_everything();
    let spawns = dir.path().join("spawns.log");
    // Every start of the child is counted: the gateway must not respawn it per call.
    let shell = format!("echo start >> '{}'; exec {}", spawns.display(), quoted(&command));
    let config = config_with(dir.path(), "ev", shell, &["echo", "get-sum"]);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/mcp", gw.base);

    let direct = answers(&run("python legacy", &format!("stdio:{}", json!(command)), CALLS).await);
    assert!(direct.iter().all(|(ok, _)| *ok), "directly: {direct:?}");
    assert_eq!(direct[0].1[0]["text"], "Echo: hi", "{direct:?}");
    same_as_direct(&url, &command, CALLS, 2).await;
    // Ten more calls: the child was started a bounded number of times (once per pooled
    // session), not once per call.
    let many = json!((0..10).map(|i| json!(["echo", {"message": format!("n{i}")}])).collect::<Vec<_>>()).to_string();
    let out = py_script("mcp_peer_client.py", &[&url, "2026-07-28", &many]).await;
    assert!(answers(&out).iter().all(|(ok, _)| *ok), "{:?}", answers(&out));
    let starts = std::fs::read_to_string(&spawns).unwrap_or_default().lines().count();
    assert!(starts <= 3, "server-everything was started {starts} times for 18 calls and their discoveries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fastmcp_server_behind_the_gateway_answers_both_client_eras_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/fastmcp_peer.py");
    let command = vec![switchyard_tests::mcp::python().display().to_string(), peer.display().to_string()];
    let config = config_with(dir.path(), "fm", format!("exec {}", quoted(&command)), &["add", "greet", "chart"]);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/mcp", gw.base);
    let calls = r#"[["add", {"a": 2, "b": 3}], ["greet", {"name": "Ada"}], ["chart", {}], ["fail", {}]]"#;
    same_as_direct(&url, &command, calls, 4).await;
}
