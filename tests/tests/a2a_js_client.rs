//! The official A2A JavaScript SDK (`@a2a-js/sdk` 1.3.0, from npm) as a client of the gateway on
//! JSON-RPC, HTTP+JSON and gRPC (`tests/js/a2a_client.mjs`: send, get, a message answer blocking
//! and streamed, a streamed lifecycle, input required and its follow-up, cancel, list, an
//! unknown task): against the built-in `tck` agent, and against an agent on the official Python
//! SDK seen directly and through the gateway, where it must see the same.

use switchyard_tests::a2a::{InternalAgent, js_script, lines, write_config, write_gateway_config};
use switchyard_tests::gateway::{Gateway, Options};

const CHECKS: usize = 11;

/// Runs the JS client against `base` on every binding; each must pass every check.
async fn all_bindings(base: &str) {
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let out = js_script("a2a_client.mjs", &[base, binding]).await;
        let checks = lines(&out);
        assert!(
            out.status.success() && checks.iter().filter(|c| c["ok"] == true).count() == CHECKS,
            "{base} {binding}: {checks:#?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_js_sdk_works_with_the_built_in_agent_on_every_binding() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "", "anonymous = true");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    // The SDK resolves the card relative to the base URL: an agent's base ends with `/`.
    all_bindings(&format!("{}/a2a/tck/", gw.base)).await;
    all_bindings(&gw.base).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_js_sdk_sees_an_sdk_agent_through_the_gateway_as_it_sees_it_directly() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start_tck(dir.path());
    all_bindings(&format!("{}/", agent.url)).await;
    let agents = format!(
        "[[a2a.agents]]\nname = \"sdk\"\nkind = \"upstream\"\ncard_url = \"{}/.well-known/agent-card.json\"\n",
        agent.url
    );
    let config = write_gateway_config(dir.path(), "anonymous = true", &agents);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    all_bindings(&format!("{}/a2a/sdk/", gw.base)).await;
}
