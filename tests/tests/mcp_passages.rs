//! Every MCP method that reaches an upstream is decided, through the real binary: `resources/read`,
//! `resources/subscribe`, `prompts/get` and `completion/complete` go to the policy enforcement
//! point (envelope, deny rules, tiers; a read is routine by default) and each decision is
//! audited; a URI no upstream listed (nor one of its templates) is never sent on a guess; and an
//! upstream's own `skill://` URI, which no approved scoped skill covers, is refused — it used to
//! pass through unjournaled, skipping the pinned-manifest check.

use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{UpstreamSpec, connect, read, write_config};

const POLICY: &str = r#"
[policy]

[[policy.envelope]]
upstream = "fixture"
operation = "resource:test://static-text"
reason = "the static text is closed"

[[policy.rules]]
upstream = "fixture"
operation = "prompt:test_prompt_with_arguments"
deny = true
reason = "no prompts with arguments"

[[policy.rules]]
upstream = "fixture"
operation = "completion:*"
deny = true
reason = "no completions"

[audit]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_prompts_and_completions_are_decided_and_audited() {
    let dir = tempfile::tempdir().unwrap();
    let skills = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/skills");
    let fixture = UpstreamSpec::stdio("fixture", &[("FIXTURE_SKILLS_DIR", &skills.display().to_string())]);
    let config = write_config(dir.path(), &[fixture], POLICY);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });

    for modern in [true, false] {
        let client = connect(&format!("{}/mcp", gw.base), modern).await;
        let era = if modern { "2026-07-28" } else { "legacy" };

        // The envelope refuses the listed resource; a template's resource is routine.
        let closed = read(&client, "test://static-text").await;
        assert!(closed.as_ref().is_err_and(|e| e.contains("the static text is closed")), "{era}: {closed:?}");
        let open = read(&client, "test://template/7/data").await;
        assert!(open.is_ok(), "{era}: {open:?}");

        // Nothing listed it and no template matches: refused here, never sent on a guess.
        let unlisted = read(&client, "test://not-listed").await;
        assert!(unlisted.as_ref().is_err_and(|e| e.contains("resource not found")), "{era}: {unlisted:?}");

        // The upstream's own skill URI is no approved scoped skill file: refused; the scoped
        // one is served.
        let unscoped = read(&client, "skill://code-review/SKILL.md").await;
        assert!(unscoped.as_ref().is_err_and(|e| e.contains("resource not found")), "{era}: {unscoped:?}");
        assert!(read(&client, "skill://fixture/code-review/SKILL.md").await.is_ok(), "{era}");

        let mut with_args = GetPromptRequestParams::new("fixture__test_prompt_with_arguments");
        with_args.arguments = serde_json::from_value(serde_json::json!({"arg1": "a", "arg2": "b"})).unwrap_or_default();
        // Prompts are exposed under the upstream's prefix; the rules name the upstream's own.
        let denied = client.peer().get_prompt(with_args).await;
        assert!(
            denied.as_ref().is_err_and(|e| e.to_string().contains("no prompts with arguments")),
            "{era}: {denied:?}"
        );
        let simple = client.peer().get_prompt(GetPromptRequestParams::new("fixture__test_simple_prompt")).await;
        assert!(simple.is_ok(), "{era}: {simple:?}");

        let completion = CompleteRequestParams::new(
            Reference::for_prompt("fixture__test_prompt_with_arguments"),
            ArgumentInfo::new("arg1", "a"),
        );
        let refused = client.peer().complete(completion).await;
        assert!(refused.as_ref().is_err_and(|e| e.to_string().contains("no completions")), "{era}: {refused:?}");
        drop(client);
    }

    // None of these was journaled as a call, and every decision is in the audit log.
    assert!(
        gw.all("default").await.iter().all(|i| i["target"]["operation"] == "skill:read"),
        "only the skill file reads are invocations"
    );
    let (ok, exported) = gw.cli(&["audit", "export"]);
    assert!(ok, "{exported}");
    let decided = |operation: &str, verdict: &str| {
        exported.lines().filter(|l| l.contains(operation) && l.contains(&format!("\"verdict\":\"{verdict}\""))).count()
    };
    assert_eq!(decided("\"resource:test://static-text\"", "deny"), 2, "{exported}");
    assert_eq!(decided("\"resource:test://template/7/data\"", "allow"), 2, "{exported}");
    assert_eq!(decided("\"prompt:test_prompt_with_arguments\"", "deny"), 2, "{exported}");
    assert_eq!(decided("\"prompt:test_simple_prompt\"", "allow"), 2, "{exported}");
    assert_eq!(decided("\"completion:test_prompt_with_arguments\"", "deny"), 2, "{exported}");
    let (ok, verified) = gw.cli(&["audit", "verify"]);
    assert!(ok, "{verified}");
}
