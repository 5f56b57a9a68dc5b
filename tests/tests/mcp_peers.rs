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
    config_with_extra(dir, name, shell, read_only, "")
}

fn config_with_extra(dir: &std::path::Path, name: &str, shell: String, read_only: &[&str], mcp: &str) -> PathBuf {
    let ops: Vec<String> =
        read_only.iter().map(|t| format!("{} = \"read_only\"", Value::String((*t).into()))).collect();
    let config = dir.join("peers.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\nanonymous = true\nconnect_timeout_ms = 20000\n\
             request_state_key = \"switchyard-test-request-state-key-0123456789\"\n{mcp}\n\
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

/// What the SDK made of each operation, in order: `(operation, ok, result or error)`, and the
/// questions the client was asked (elicitation forms with their fields in order, sampling,
/// roots) where they fell.
fn answers(out: &std::process::Output) -> Vec<Value> {
    lines(out).into_iter().filter(|l| l.get("op").is_some() || l.get("asked").is_some()).collect()
}

/// An answer as compared: the gateway's own additions taken out — its namespaced `_meta` keys
/// (`dev.switchyard/…`), and the server identity a 2026-07-28 result names (the gateway's, not
/// the upstream's: only its presence is compared) — and, between a client and a baseline of
/// different eras, the fields the era itself adds (`resultType`, `ttlMs`, `cacheScope`, the
/// server identity).
fn normalized(mut line: Value, cross_era: bool) -> Value {
    fn strip(v: &mut Value, cross_era: bool) {
        let Some(o) = v.as_object_mut() else { return };
        if let Some(meta) = o.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.retain(|k, _| !k.starts_with("dev.switchyard/"));
            if cross_era {
                meta.remove("io.modelcontextprotocol/serverInfo");
            } else if let Some(info) = meta.get_mut("io.modelcontextprotocol/serverInfo") {
                *info = json!("<server>");
            }
            if meta.is_empty() {
                o.remove("_meta");
            }
        }
        if cross_era {
            for k in ["resultType", "ttlMs", "cacheScope"] {
                o.remove(k);
            }
        }
        if let Some(inner) = o.get_mut("result") {
            strip(inner, cross_era);
        }
    }
    if let Some(r) = line.get_mut("result") {
        strip(r, cross_era);
        // The last notification (progress = total) leaves right before the result and races it:
        // an SDK may drop it once the response has arrived, directly as much as through the
        // gateway. The ones before it must all arrive.
        if let Some(progress) = r.get_mut("progress").and_then(Value::as_array_mut) {
            progress.retain(|p| p.get(0) != p.get(1));
        }
    }
    line
}

/// Where two answers first differ: the JSON pointer and both values there.
fn first_difference(at: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: Vec<&String> = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))).collect();
            keys.into_iter().find_map(|k| {
                let here = format!("{at}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(&here, p, q),
                    (p, q) => Some(format!("{here}: directly {p:?}, through {q:?}")),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(&format!("{at}/{i}"), p, q))
        }
        _ if a == b => None,
        _ => Some(format!("{at}: directly {a}, through {b}")),
    }
}

/// The checks of the matrix, as operations both clients run.
fn ops(checks: &[(&str, Value)]) -> String {
    Value::Array(checks.iter().map(|(_, op)| op.clone()).collect()).to_string()
}

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

/// Each client sees `url` (the gateway) as it sees `command` directly: the same answers, field by
/// field apart from the gateway's own additions ([`normalized`]), the same questions (forms with
/// their fields in order), and its own tools, in the upstream's order, among those listed
/// (server-everything adds tools for the client capabilities it sees — roots, sampling,
/// elicitation — which the gateway declares). Prints the matrix (client × check, directly and
/// through the gateway) and fails on any difference.
async fn same_as_direct(
    upstream: &str,
    url: &str,
    command: &[String],
    checks: &[(&str, Value)],
    modern_upstream: bool,
) {
    let stdio = format!("stdio:{}", json!(command));
    let script = ops(checks);
    let mut differences = Vec::new();
    println!("{upstream}: client × check, directly | through the gateway");
    for (client, legacy_baseline) in CLIENTS {
        let baseline = if modern_upstream { client } else { legacy_baseline };
        // A 2026-07-28 client meets a legacy upstream only through the gateway.
        let cross_era = !modern_upstream && matches!(client, "python 2026-07-28" | "ts v2");
        let direct_out = run(baseline, &stdio, &script).await;
        let out = run(client, url, &script).await;
        let (direct, through) = (answers(&direct_out), answers(&out));
        let era = |o: &std::process::Output| lines(o).into_iter().find_map(|l| l.get("era").cloned());
        println!("  {client}: era directly {:?}, through the gateway {:?}", era(&direct_out), era(&out));
        let results = |a: &[Value]| a.iter().filter(|l| l.get("op").is_some()).cloned().collect::<Vec<_>>();
        let (direct_results, through_results) = (results(&direct), results(&through));
        assert_eq!(
            direct_results.len(),
            checks.len(),
            "{client} directly ({baseline}): {direct:?}\n{}",
            String::from_utf8_lossy(&direct_out.stderr)
        );
        // The questions asked before each answer: the same, in the same place.
        let asked_before = |a: &[Value]| {
            let mut per_op = vec![Vec::new(); checks.len() + 1];
            let mut i = 0;
            for l in a {
                if l.get("op").is_some() {
                    i += 1;
                } else if let Some(slot) = per_op.get_mut(i) {
                    slot.push(l.clone());
                }
            }
            per_op
        };
        let (direct_asked, through_asked) = (asked_before(&direct), asked_before(&through));
        for (i, (name, _)) in checks.iter().enumerate() {
            let d = direct_results.get(i).cloned().map(|l| normalized(l, cross_era));
            let t = through_results.get(i).cloned().map(|l| normalized(l, cross_era));
            let ok = |l: &Option<Value>| match l {
                Some(l) if l["ok"] == true => "ok",
                Some(_) => "error",
                None => "missing",
            };
            let same = d == t && direct_asked[i] == through_asked[i];
            println!(
                "  {client:<18} {name:<22} {:<6} | {:<6} {}",
                ok(&d),
                ok(&t),
                if same { "same" } else { "DIFFERENT" }
            );
            if !same {
                let (d, t) = (d.unwrap_or_default(), t.unwrap_or_default());
                differences.push(format!(
                    "{client} {name}: {}\n  asked directly {:?}\n  asked through {:?}",
                    first_difference("", &d, &t).unwrap_or_default(),
                    direct_asked[i],
                    through_asked[i]
                ));
            }
        }
        let (all, own) = (listed(&out), listed(&direct_out));
        let all: Vec<&Value> = all.as_array().map(|a| a.iter().collect()).unwrap_or_default();
        let mut rest = all.iter();
        let in_order = own.as_array().is_some_and(|o| o.iter().all(|t| rest.any(|a| *a == t)));
        if !in_order {
            differences.push(format!("{client}: {own} should appear, in order, in {}", json!(all)));
        }
        // Objects keep the upstream's key order (a form's fields, a schema's properties).
        if let Some(direct_props) = property_order(&direct_out) {
            let through_props = property_order(&out).unwrap_or_default();
            for (tool, keys) in direct_props {
                if through_props.get(&tool) != Some(&keys) {
                    differences.push(format!("{client}: the properties of {tool}, in order: {keys} directly"));
                }
            }
        }
        if through_results.len() != checks.len() {
            differences.push(format!("{client} through the gateway:\n{}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(differences.is_empty(), "{upstream}: through the gateway vs directly:\n{}", differences.join("\n"));
}

/// Each tool's input schema property names in order, as the TypeScript client printed them.
fn property_order(out: &std::process::Output) -> Option<serde_json::Map<String, Value>> {
    lines(out).into_iter().find_map(|l| l.get("properties").and_then(Value::as_object).cloned())
}

/// The matrix's checks against server-everything: read and write tools, a rich schema and
/// structured content, a server→client question of each kind during a call (elicitation with a
/// 13-field form, sampling, roots), progress, a call the client gives up on (and one after it),
/// resources, prompts and completion.
fn everything_checks() -> Vec<(&'static str, Value)> {
    vec![
        ("call read (echo)", json!(["call", "echo", {"message": "hi"}])),
        ("call read (get-sum)", json!(["call", "get-sum", {"a": 2, "b": 3}])),
        ("call write (structured)", json!(["call", "get-structured-content", {"location": "New York"}])),
        (
            "call write (annotated)",
            json!(["call", "get-annotated-message", {"messageType": "error", "includeImage": true}]),
        ),
        ("call write (links)", json!(["call", "get-resource-links", {"count": 2}])),
        ("elicitation", json!(["call", "trigger-elicitation-request", {}])),
        ("sampling", json!(["call", "trigger-sampling-request", {"prompt": "hi", "maxTokens": 10}])),
        ("roots", json!(["call", "get-roots-list", {}])),
        ("progress", json!(["progress", "trigger-long-running-operation", {"duration": 0.3, "steps": 3}])),
        ("cancel", json!(["cancel", "trigger-long-running-operation", {"duration": 3, "steps": 3}, 0.5])),
        ("call after cancel", json!(["call", "echo", {"message": "after"}])),
        ("resources/list", json!(["resources"])),
        ("templates/list", json!(["templates"])),
        ("resources/read", json!(["read", "demo://resource/static/document/architecture.md"])),
        ("prompts/list", json!(["prompts"])),
        ("prompts/get", json!(["prompt", "args-prompt", {"city": "Paris", "state": "TX"}])),
        ("completion", json!(["complete", "completable-prompt", "name", "", {"department": "Sales"}])),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_reference_server_behind_the_gateway_answers_both_client_eras_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap();
    let command = server_everything();
    let spawns = dir.path().join("spawns.log");
    // Every start of the child is counted: the gateway must not respawn it per call.
    let shell = format!("echo start >> '{}'; exec {}", spawns.display(), quoted(&command));
    let config = config_with(dir.path(), "ev", shell, &["echo", "get-sum"]);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/mcp", gw.base);

    let checks = everything_checks();
    let direct = answers(&run("python legacy", &format!("stdio:{}", json!(command)), &ops(&checks[..1])).await);
    assert_eq!(direct.last().map(|l| l["result"]["content"][0]["text"].clone()), Some(json!("Echo: hi")), "{direct:?}");
    same_as_direct("server-everything (2025-11-25)", &url, &command, &checks, false).await;
    // Ten more calls: the child was started a bounded number of times (once per pooled
    // session), not once per call.
    let starts_before = std::fs::read_to_string(&spawns).unwrap_or_default().lines().count();
    let many = json!((0..10).map(|i| json!(["call", "echo", {"message": format!("n{i}")}])).collect::<Vec<_>>());
    let out = py_script("mcp_peer_client.py", &[&url, "2026-07-28", &many.to_string()]).await;
    assert!(answers(&out).iter().all(|l| l["ok"] == true), "{:?}", answers(&out));
    let starts = std::fs::read_to_string(&spawns).unwrap_or_default().lines().count();
    assert_eq!(starts, starts_before, "ten calls started server-everything {} more times", starts - starts_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fastmcp_server_behind_the_gateway_answers_both_client_eras_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, command) = fastmcp_gateway(dir.path());
    let url = format!("{}/mcp", gw.base);
    let checks = fastmcp_checks();
    same_as_direct("FastMCP 4.2.3 (2026-07-28)", &url, &command, &checks, true).await;
}

/// A gateway in front of the FastMCP server (its reads marked `read_only`), and the server's
/// command.
fn fastmcp_gateway(dir: &std::path::Path) -> (Gateway, Vec<String>) {
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/fastmcp_peer.py");
    let command = vec![switchyard_tests::mcp::python().display().to_string(), peer.display().to_string()];
    let config = config_with(dir, "fm", format!("exec {}", quoted(&command)), &["add", "greet", "chart"]);
    (Gateway::start(Options { data_dir: dir.join("d"), config: Some(config), ..Options::default() }), command)
}

/// The matrix's checks against the FastMCP server.
fn fastmcp_checks() -> Vec<(&'static str, Value)> {
    vec![
        ("call read (structured)", json!(["call", "add", {"a": 2, "b": 3}])),
        ("call read (text)", json!(["call", "greet", {"name": "Ada"}])),
        ("call read (image)", json!(["call", "chart", {}])),
        ("call write (tool error)", json!(["call", "fail", {}])),
        ("progress", json!(["progress", "steps", {"n": 3}])),
        ("cancel", json!(["cancel", "steps", {"n": 40}, 0.5])),
        ("call after cancel", json!(["call", "greet", {"name": "again"}])),
        ("resources/list", json!(["resources"])),
        ("resources/read", json!(["read", "data://motd"])),
        ("prompts/list", json!(["prompts"])),
        ("prompts/get", json!(["prompt", "review", {"topic": "gateways"}])),
    ]
}

/// `command` behind `switchyard stdio` (data in `data`), as a client's `stdio:` server.
fn behind_stdio(data: &std::path::Path, command: &[String], read_only: &[&str]) -> String {
    let mut wrapped = vec![switchyard_tests::gateway::binary().display().to_string(), "stdio".into()];
    wrapped.extend(["--data-dir".to_string(), data.display().to_string()]);
    for read in read_only {
        wrapped.extend(["--read-only".to_string(), read.to_string()]);
    }
    wrapped.push("--".into());
    wrapped.extend(command.iter().cloned());
    format!("stdio:{}", json!(wrapped))
}

/// `switchyard stdio` launched by each client in place of the FastMCP server, as a desktop client
/// launches it from its configuration: the same answers as the server launched directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fastmcp_server_behind_switchyard_stdio_answers_each_client_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap();
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/fastmcp_peer.py");
    let command = vec![switchyard_tests::mcp::python().display().to_string(), peer.display().to_string()];
    let through = behind_stdio(&dir.path().join("d"), &command, &["add", "greet", "chart"]);
    same_as_direct("FastMCP 4.2.3 behind switchyard stdio", &through, &command, &fastmcp_checks(), true).await;
}

/// `switchyard connect` to the gateway's `/mcp`, launched by each client as a stdio server: the
/// same answers (progress, cancel, questions included) as the client gets over HTTP from the
/// same gateway. Here "directly" is through `connect`, and "through the gateway" is over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_through_switchyard_connect_answers_each_client_as_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _) = fastmcp_gateway(dir.path());
    let url = format!("{}/mcp", gw.base);
    let data = dir.path().join("c").display().to_string();
    let bin = switchyard_tests::gateway::binary().display().to_string();
    let connect = vec![bin, "connect".into(), url.clone(), "--data-dir".into(), data];
    same_as_direct("the gateway through switchyard connect", &url, &connect, &fastmcp_checks(), true).await;
}

/// The reference server behind `switchyard stdio`: its questions during a call (elicitation,
/// sampling, roots) reach the client that launched the wrapper, as they do directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_behind_switchyard_stdio_answers_each_client_as_it_does_directly() {
    let dir = tempfile::tempdir().unwrap();
    let command = server_everything();
    let through = behind_stdio(&dir.path().join("d"), &command, &["echo", "get-sum"]);
    same_as_direct("server-everything behind switchyard stdio", &through, &command, &everything_checks(), false).await;
}

/// The rounds of a held call, driven by hand: the answered round gets the upstream's result; a
/// replay of that `requestState` is refused (the question was answered, nothing is asked or
/// called again); a hold left unanswered past `request_state_ttl_ms` is refused too, the upstream
/// hears that its question went unanswered (the invocation settles), and the pooled session
/// serves the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_question_is_answered_once_and_expires_when_nobody_answers() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_with_extra(
        dir.path(),
        "ev",
        format!("exec {}", quoted(&server_everything())),
        &["echo"],
        "request_state_ttl_ms = 3000\n",
    );
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/mcp", gw.base);
    let rounds = |wait: &'static str| {
        let url = url.clone();
        async move {
            let out = py_script("mcp_held_rounds.py", &[&url, "trigger-elicitation-request", wait]).await;
            let seen = lines(&out);
            assert_eq!(seen.len(), 3, "{seen:?}\n{}", String::from_utf8_lossy(&out.stderr));
            seen
        }
    };

    let seen = rounds("0").await;
    assert_eq!(seen[0]["asked"], json!({"upstream-1": "elicitation/create"}), "{seen:?}");
    let text = seen[1]["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(seen[1]["ok"] == true && text.contains("User provided the requested information"), "{seen:?}");
    let invocation = seen[1]["result"]["_meta"]["dev.switchyard/invocation"].clone();
    assert!(invocation.is_string(), "{seen:?}");
    let replay = seen[2]["error"].as_str().unwrap_or_default();
    assert!(seen[2]["ok"] == false && replay.contains("no longer holds"), "{seen:?}");
    assert!(replay.contains(invocation.as_str().unwrap_or("?")), "the refusal names the call: {replay}");

    let seen = rounds("4").await;
    let late = seen[1]["error"].as_str().unwrap_or_default();
    assert!(seen[1]["ok"] == false && (late.contains("expired") || late.contains("no longer holds")), "{seen:?}");
    // The upstream heard: the call went on and settled without the answer.
    let runs = gw.all_settled("default").await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r["state"]["state"] == "succeeded"), "{runs:?}");
    let unanswered = runs.iter().any(|r| {
        r["state"]["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("did not answer in time"))
    });
    assert!(unanswered, "the upstream was told its question went unanswered: {runs:?}");
    let after = json!([["call", "echo", {"message": "still here"}]]).to_string();
    let out = py_script("mcp_peer_client.py", &[&url, "2026-07-28", &after]).await;
    let last = answers(&out).pop().unwrap_or_default();
    assert_eq!(last["result"]["content"][0]["text"], "Echo: still here", "{last}");
}
