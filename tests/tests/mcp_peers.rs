//! MCP servers and clients that no one here wrote, directly and through the gateway: the
//! reference `@modelcontextprotocol/server-everything` (npm, 2025-11-25, over stdio) behind the
//! gateway, driven by the official Python SDK (mcp 2.3.0) as a 2026-07-28 and as a legacy client.

use std::path::PathBuf;

use serde_json::{Value, json};
use switchyard_tests::a2a::{lines, py_script};
use switchyard_tests::gateway::{Gateway, Options};

/// The command that runs server-everything over stdio: `SWITCHYARD_MCP_PEERS` is a directory
/// whose `node_modules` hold it (scripts/test.sh installs it from npm into the tools cache); Node
/// is `SWITCHYARD_NODE`, else `node`.
fn server_everything() -> Vec<String> {
    let peers = std::env::var_os("SWITCHYARD_MCP_PEERS").filter(|p| !p.is_empty()).map_or_else(
        || PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/switchyard-tools/mcp-peers"),
        PathBuf::from,
    );
    let script = peers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "no server-everything in {}: run `bash scripts/test.sh` (it installs it from npm) or set SWITCHYARD_MCP_PEERS",
        peers.display()
    );
    let node = std::env::var("SWITCHYARD_NODE").ok().filter(|n| !n.is_empty()).unwrap_or_else(|| "node".into());
    vec![node, script.display().to_string(), "stdio".into()]
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_reference_server_behind_the_gateway_answers_both_client_eras_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let command = server_everything();
    let spawns = dir.path().join("spawns.log");
    // Every start of the child is counted: the gateway must not respawn it per call.
    let shell = format!(
        "echo start >> '{}'; exec {}",
        spawns.display(),
        command.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ")
    );
    let config = dir.path().join("peers.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\nanonymous = true\nconnect_timeout_ms = 20000\n\
             request_state_key = \"switchyard-test-request-state-key-0123456789\"\n\n\
             [[mcp.upstreams]]\nname = \"ev\"\nprefix = \"\"\ncommand = [\"sh\", \"-c\", {}]\n\
             operations = {{ echo = \"read_only\", \"get-sum\" = \"read_only\" }}\n",
            Value::String(shell)
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/mcp", gw.base);

    let direct = py_script("mcp_peer_client.py", &[&format!("stdio:{}", json!(command)), "legacy", CALLS]).await;
    let direct = answers(&direct);
    assert_eq!(direct.len(), 2, "{direct:?}");
    assert!(direct.iter().all(|(ok, _)| *ok), "directly: {direct:?}");
    assert_eq!(direct[0].1[0]["text"], "Echo: hi", "{direct:?}");

    for mode in ["2026-07-28", "legacy"] {
        let out = py_script("mcp_peer_client.py", &[&url, mode, CALLS]).await;
        let through = answers(&out);
        assert_eq!(through, direct, "{mode} through the gateway vs directly\n{}", String::from_utf8_lossy(&out.stderr));
    }
    // Ten more calls: the child was started a bounded number of times (once per pooled
    // session), not once per call.
    let many = json!((0..10).map(|i| json!(["echo", {"message": format!("n{i}")}])).collect::<Vec<_>>()).to_string();
    let out = py_script("mcp_peer_client.py", &[&url, "2026-07-28", &many]).await;
    assert!(answers(&out).iter().all(|(ok, _)| *ok), "{:?}", answers(&out));
    let starts = std::fs::read_to_string(&spawns).unwrap_or_default().lines().count();
    assert!(starts <= 3, "server-everything was started {starts} times for 14 calls and 4 discoveries at most");
}
