//! The approval page (`/console/approvals`) of the real gateway binary in headless Chromium
//! (Debian's `chromium`, driven by `playwright-core` from npm): sign in with the admin token,
//! list the held calls, open one and approve it (it then runs once), refuse a cross-site form
//! post and a same-origin post without the CSRF token (nothing changes), deny the other with a
//! reason; the calls page then lists both; an `unknown` write (its reply outlasted the attempt
//! timeout) is found under "Unknown" and reconciled as applied. Screenshots go to
//! `$TMPDIR/switchyard-approvals-page/`.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, TOKEN, call_log};

/// Chromium is there: `SWITCHYARD_CHROMIUM` (the script reads it too), else Debian's.
fn chromium() {
    let path =
        std::env::var("SWITCHYARD_CHROMIUM").ok().filter(|p| !p.is_empty()).unwrap_or("/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&path).exists(),
        "no Chromium at {path}: apt-get install chromium (scripts/test.sh does) or set SWITCHYARD_CHROMIUM"
    );
}

/// `$TMPDIR/<name>`, made, for a script's screenshots.
fn screenshots(name: &str) -> String {
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir.display().to_string()
}

/// Runs the page script `tests/js/<script>` (Chromium, playwright-core) with `args`: it must run
/// to its end with all of its `checks` checks passing.
async fn in_chromium(script: &str, args: &[&str], checks: usize) {
    let out = switchyard_tests::node::run("SWITCHYARD_BROWSER", "browser", "playwright-core", script, args).await;
    let seen: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(
        out.status.success() && seen.len() == checks && seen.iter().all(|c| c["ok"] == true),
        "{seen:#?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn held(gw: &Gateway, key: &str) -> String {
    let (status, inv) =
        gw.submit("default", "count", json!({"key": key}), None, 0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((status, inv["state"]["state"].as_str()), (202, Some("awaiting_approval")), "{inv}");
    inv["id"].as_str().unwrap_or_default().to_string()
}

/// A write approved by `ops` whose reply outlasts the attempt timeout: `unknown`.
async fn unknown_write(gw: &Gateway) -> String {
    let (status, inv) = gw
        .submit("default", "count", json!({"key": "slow", "delay_ms": 6000}), None, 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 202, "{inv}");
    let id = inv["id"].as_str().unwrap_or_default().to_string();
    let approve = gw
        .http
        .post(format!("{}/admin/v1/invocations/{id}/approve", gw.base))
        .bearer_auth(TOKEN)
        .header("x-switchyard-subject", "ops")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(approve.status().as_u16(), 200);
    for _ in 0..100 {
        if state_of(gw, &id).await["state"] == "unknown" {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{id} did not become unknown: {}", state_of(gw, &id).await);
}

async fn state_of(gw: &Gateway, id: &str) -> Value {
    gw.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap_or_else(|e| panic!("{e}")).1["state"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_page_lists_opens_approves_and_refuses_cross_site_posts() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchyard.toml");
    // Writes whose reply takes longer than two seconds end `unknown` (others take milliseconds).
    std::fs::write(&config, "[engine]\nattempt_timeout_ms = 2000\n[policy]\n").unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let (approve, deny) = (held(&gw, "page-1").await, held(&gw, "page-2").await);
    let lost = unknown_write(&gw).await;
    let shots = screenshots("switchyard-approvals-page");
    in_chromium("approvals_page.mjs", &[&gw.base, TOKEN, &approve, &deny, &shots, &lost], 12).await;

    // The approved call ran once; the denied one never ran and says why.
    let mut done = Value::Null;
    for _ in 0..100 {
        done = state_of(&gw, &approve).await;
        if done["state"] == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(done["state"], "succeeded", "{done}");
    let calls = call_log(&gw.opts.data_dir);
    assert_eq!(calls.iter().filter(|(inv, _)| *inv == approve).count(), 1, "{calls:?}");
    assert!(!calls.iter().any(|(inv, _)| *inv == deny), "{calls:?}");
    let denied = state_of(&gw, &deny).await;
    assert_eq!(denied["error"]["code"], "approval_denied", "{denied}");
    assert_eq!(denied["error"]["message"], "not during the freeze", "{denied}");
}

async fn tools(client: &switchyard_tests::mcp::Client) -> Vec<String> {
    let all = client.list_all_tools().await.unwrap_or_else(|e| panic!("tools/list: {e}"));
    all.into_iter().map(|t| t.name.to_string()).collect()
}

/// A slow call's journal grows live on its page; the upstreams page: a tool whose schema changed
/// since it was pinned is withheld, the operator approves it in the console (a post without the
/// CSRF token is refused first), and the running gateway lists it again; signed in for another
/// tenant, the first tenant's call is not visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_approves_a_drifted_tool_and_hides_other_tenants_calls() {
    use switchyard_tests::mcp::{UpstreamSpec, connect, write_config};
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let start = |variant: &str| {
        let config = write_config(dir.path(), &[UpstreamSpec::stdio("fx", &[("FIXTURE_SCHEMA_VARIANT", variant)])], "");
        Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() })
    };
    let mut gw = start("1");
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    assert!(tools(&client).await.contains(&"fx__drift_tool".to_string()), "pinned on first sight");
    assert!(gw.terminate());
    // The upstream now declares another input schema: withheld.
    let gw = start("2");
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    assert!(!tools(&client).await.contains(&"fx__drift_tool".to_string()), "withheld after the change");
    let (status, call) = gw.submit("default", "count", json!({"key": "mine"}), None, 0).await.unwrap();
    assert_eq!(status, 201, "{call}");
    let foreign = call["id"].as_str().unwrap_or_default().to_string();
    // A write that takes long enough to outlast Chromium's start on a loaded machine (4 s did not
    // once, beside the other Chromium test), for the live journal.
    let (status, slow) =
        gw.submit("default", "count", json!({"key": "slow", "delay_ms": 12000}), None, 0).await.unwrap();
    assert_eq!(status, 201, "{slow}");
    let slow = slow["id"].as_str().unwrap_or_default().to_string();
    let shots = screenshots("switchyard-console-upstreams");
    in_chromium("console_upstreams.mjs", &[&gw.base, TOKEN, &shots, &foreign, &slow], 8).await;
    // The running gateway lists the tool again at once, and the pin names who approved it.
    assert!(tools(&client).await.contains(&"fx__drift_tool".to_string()), "listed again after the approval");
    let (_, view) = gw.get("default", "/admin/v1/upstreams").await.unwrap();
    let pins = view["bindings"].as_array().cloned().unwrap_or_default();
    let pin = pins.iter().find(|b| b["name"] == "drift_tool" && b["kind"] == "tool");
    assert_eq!(pin.map(|b| b["approved_by"].clone()), Some(json!("reviewer (console)")), "{view}");
}
