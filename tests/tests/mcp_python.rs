//! The official Python MCP SDK (`mcp==2.3.0`) as an independent client: in `2026-07-28` and
//! `legacy` modes, through the gateway to (a) a stdio upstream and (b) an HTTP upstream — list
//! tools, call a tool, an elicitation round, progress, and a cancellation that reaches the
//! invocation. The interpreter is `$SWITCHYARD_PY` (the test command makes a venv with the SDK).

use std::time::Duration;

use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{Fixture, UpstreamSpec, python, python_client_script, write_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_works_through_the_gateway_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let web = Fixture::start(&[]);
    let config =
        write_config(dir.path(), &[UpstreamSpec::stdio("local", &[]), UpstreamSpec::http("web", &web.url)], "");
    let gw = Gateway::start(Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() });
    let script = python_client_script();
    for mode in ["2026-07-28", "legacy"] {
        let out = tokio::process::Command::new(python())
            .arg(&script)
            .args([&format!("{}/mcp", gw.base), mode, "local__", "web__"])
            .output()
            .await
            .unwrap_or_else(|e| panic!("python: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{mode}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout.lines().filter(|l| l.contains("\"ok\": true")).count(), 13, "{stdout}");
    }
    // Every long call the client gave up on was canceled (read_only: canceled upstream too).
    let mut states = Vec::new();
    for _ in 0..100 {
        let all = gw.all("default").await;
        states = all
            .iter()
            .filter(|i| i["target"]["operation"] == "slow" && i["request"]["arguments"]["steps"] == 100)
            .map(|i| i["state"]["state"].as_str().unwrap_or_default().to_string())
            .collect();
        if states.len() == 4 && states.iter().all(|s| s == "canceled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(states, vec!["canceled"; 4], "the client's cancellations reached the invocations");
}

/// The Python SDK sees the policy enforcement point's answers as the tool results they are: a
/// routine call runs, a refused one is an `isError` result saying "denied" and why, a held
/// write an `isError` result naming its invocation — which the upstream has not received.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_sees_policy_denials_and_holds_as_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_s = log.display().to_string();
    let policy = "[[policy.envelope]]\nupstream = \"fx\"\noperation = \"ask_name\"\n\
                  reason = \"the assistant may not ask for names\"\n\
                  [[policy.rules]]\nupstream = \"fx\"\noperation = \"echo\"\ntier = \"routine\"\n";
    let config = write_config(dir.path(), &[UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)])], policy);
    let gw = Gateway::start(Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() });
    let script = python_client_script().with_file_name("mcp_client_policy.py");
    for mode in ["2026-07-28", "legacy"] {
        let out = tokio::process::Command::new(python())
            .arg(&script)
            .args([&format!("{}/mcp", gw.base), mode, "fx__"])
            .output()
            .await
            .unwrap_or_else(|e| panic!("python: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{mode}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout.lines().filter(|l| l.contains("\"ok\": true")).count(), 4, "{stdout}");
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default().lines().count(), 0, "held writes reached no upstream");
}
