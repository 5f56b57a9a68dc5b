//! `switchyard config …` and older configuration files, through the real binary: an older file
//! loads with a warning that prints the new form; `config migrate --write` rewrites it into a
//! file that loads without one and keeps the old file; `config schema` is the schema the docs
//! ship; a key of another kind is refused by name.

use std::path::Path;
use std::process::Output;

use switchyard_tests::gateway::binary;

fn switchyard(args: &[&str]) -> Output {
    std::process::Command::new(binary()).args(args).output().unwrap_or_else(|e| panic!("switchyard: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const OLDER: &str = r#"[a2a]
anonymous = true

[[a2a.agents]]
name = "helper"
kind = "upstream"
card_url = "http://127.0.0.1:9/.well-known/agent-card.json"

[[mcp.upstreams]]
name = "helper"
kind = "a2a"
agent = "helper"
operations = { lookup = "read_only" }

[[mcp.upstreams]]
name = "files"
command = ["switchyard-mcp-fixture", "--stdio"]
"#;

#[test]
fn an_older_file_loads_with_a_warning_and_migrates_into_one_that_loads_without() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.toml");
    std::fs::write(&file, OLDER).unwrap();
    let path = file.display().to_string();

    let checked = switchyard(&["validate-config", &path]);
    let stderr = text(&checked.stderr);
    assert!(checked.status.success(), "{stderr}");
    assert!(stderr.contains("warning:") && stderr.contains(&format!("switchyard config migrate {path}")), "{stderr}");
    assert!(
        stderr.contains("kind = \"a2a\"") && stderr.contains("kind = \"mcp\""),
        "the new form is printed: {stderr}"
    );

    let printed = switchyard(&["config", "migrate", &path]);
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some(OLDER), "without --write nothing is written");
    let migrated: toml::Table = text(&printed.stdout).parse().unwrap();
    let upstreams = migrated["upstreams"].as_array().cloned().unwrap_or_default();
    let bridge: Vec<_> = upstreams.iter().filter(|u| u["name"].as_str() == Some("helper")).collect();
    assert_eq!(bridge.len(), 1, "the agent and the upstream naming it are one entry: {upstreams:?}");
    assert_eq!(bridge[0]["expose"].as_array().map(Vec::len), Some(2), "{:?}", bridge[0]);

    let written = switchyard(&["config", "migrate", &path, "--write"]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("old.toml.bak")).ok().as_deref(), Some(OLDER));
    let again = switchyard(&["validate-config", &path]);
    assert!(again.status.success() && !text(&again.stderr).contains("warning"), "{}", text(&again.stderr));
    assert!(text(&again.stdout).contains("3 upstream(s)"), "demo, helper, files: {}", text(&again.stdout));
}

#[test]
fn a_key_of_another_kind_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    let bad =
        "[[upstreams]]\nkind = \"mcp\"\nname = \"files\"\nurl = \"http://127.0.0.1:9/mcp\"\ncard_url = \"http://x\"\n";
    std::fs::write(&file, bad).unwrap();
    let out = switchyard(&["validate-config", &file.display().to_string()]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success() && stderr.contains("unknown field `card_url`"), "{stderr}");
}

#[test]
fn the_printed_schema_is_the_one_the_docs_ship() {
    let out = switchyard(&["config", "schema"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.schema.json");
    let shipped: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shipped).unwrap_or_default()).unwrap_or_default();
    assert_eq!(printed, shipped);
    assert_eq!(printed["properties"]["upstreams"]["items"]["$ref"], "#/$defs/Upstream");
}
