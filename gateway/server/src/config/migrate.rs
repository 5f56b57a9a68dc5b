//! The older file form, rewritten into `[[upstreams]]`: `[[mcp.upstreams]]` (kinds `mcp` and
//! `a2a`) and `[[a2a.agents]]` of kind `upstream`. Such a file still loads, with a warning that
//! prints the new form; `switchyard config migrate FILE` writes it.

use toml::{Table, Value};

/// The document in the new form, and what moved (one line each); `None` when nothing had to.
pub fn migrate(doc: &Table) -> Result<Option<(Table, Vec<String>)>, String> {
    let mut doc = doc.clone();
    let old_mcp = take_array(&mut doc, "mcp", "upstreams")?;
    let agents_in_order = take_array(&mut doc, "a2a", "agents")?;
    let (old_agents, hosted): (Vec<Table>, Vec<Table>) =
        agents_in_order.iter().cloned().partition(|a| a.get("kind").and_then(Value::as_str) == Some("upstream"));
    if old_mcp.is_empty() && old_agents.is_empty() {
        return Ok(None);
    }
    // The first agent served is the root card's and gRPC's default: keep it where it was.
    let served = |a: &&Table| a.get("exposed").and_then(Value::as_bool) != Some(false);
    let first_before = agents_in_order.iter().find(served).map(|a| text(a, "name"));
    let first_after = hosted.iter().chain(&old_agents).find(served).map(|a| text(a, "name"));
    if !hosted.is_empty() {
        put_array(&mut doc, "a2a", "agents", hosted);
    }
    if let (Some(before), Some(Value::Table(a2a))) = (first_before, doc.get_mut("a2a"))
        && first_after.as_ref() != Some(&before)
        && !a2a.contains_key("default_agent")
    {
        a2a.insert("default_agent".into(), before.into());
    }
    // How many MCP upstreams bridge each agent: an agent served only through one of them becomes
    // that one's entry, whatever its name.
    let mut bridging = std::collections::HashMap::<String, usize>::new();
    for up in &old_mcp {
        if let Some(agent) = up.get("agent").and_then(Value::as_str) {
            *bridging.entry(agent.to_string()).or_default() += 1;
        }
    }
    let mut moved = Vec::new();
    let mut new: Vec<Table> = Vec::new();
    for mut agent in old_agents {
        let name = text(&agent, "name");
        agent.insert("kind".into(), "a2a".into());
        let exposed = agent.remove("exposed").and_then(|v| v.as_bool()).unwrap_or(true);
        let faces: Vec<Value> = if exposed { vec!["a2a".into()] } else { Vec::new() };
        agent.insert("expose".into(), Value::Array(faces));
        moved.push(format!("[[a2a.agents]] `{name}` (kind upstream) → [[upstreams]] kind = \"a2a\""));
        new.push(agent);
    }
    for mut up in old_mcp {
        let name = text(&up, "name");
        match up.remove("kind").as_ref().and_then(Value::as_str) {
            None | Some("mcp") => {
                moved.push(format!("[[mcp.upstreams]] `{name}` → [[upstreams]] kind = \"mcp\""));
                new.push(kind_first("mcp", up));
            }
            Some("a2a") => {
                up.remove("max_sessions");
                up.insert("expose".into(), Value::Array(vec!["mcp".into()]));
                let agent = up.get("agent").and_then(Value::as_str).map(str::to_string);
                let target = agent.as_deref().and_then(|a| {
                    let only = bridging.get(a) == Some(&1);
                    new.iter().position(|t| mergeable(t, a, &name, only))
                });
                if let Some(i) = target {
                    // The bridge in one entry: the agent's entry is served on MCP too.
                    let entry = &mut new[i];
                    entry.insert("name".into(), name.clone().into());
                    for key in ["prefix", "operations", "tasks"] {
                        if let Some(v) = up.remove(key) {
                            entry.insert(key.into(), v);
                        }
                    }
                    if let Some(Value::Array(faces)) = entry.get_mut("expose") {
                        faces.push("mcp".into());
                    }
                    moved.push(format!("[[mcp.upstreams]] `{name}` (kind a2a) → \"mcp\" in that agent's expose"));
                } else {
                    let renamed = if up.contains_key("card_url") {
                        format!(
                            " (its agent was `mcp-{name}`, now `{name}`: a policy rule on `a2a-agent-mcp-{name}` needs the new name)"
                        )
                    } else {
                        String::new()
                    };
                    moved
                        .push(format!("[[mcp.upstreams]] `{name}` (kind a2a) → [[upstreams]] kind = \"a2a\"{renamed}"));
                    new.push(kind_first("a2a", up));
                }
            }
            Some(other) => return Err(format!("mcp.upstreams `{name}`: kind `{other}` is not `mcp` or `a2a`")),
        }
    }
    for entry in &mut new {
        if entry.get("expose").and_then(Value::as_array).is_some_and(|f| f == &[Value::from("a2a")]) {
            entry.remove("expose"); // the default of an agent with a card
        }
    }
    let had_upstreams = doc.contains_key("upstreams");
    let mut upstreams = match doc.remove("upstreams") {
        None => Vec::new(),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("`upstreams` must be an array of tables ([[upstreams]])".into()),
    };
    if !had_upstreams {
        // The file had no [[upstreams]]: the built-in demo it had by default stays.
        upstreams.push(Value::Table(Table::from_iter([
            ("kind".to_string(), Value::from("demo")),
            ("name".to_string(), Value::from("demo")),
            (
                "operations".to_string(),
                Value::Table(Table::from_iter([
                    ("echo".to_string(), Value::from("read_only")),
                    ("count".to_string(), Value::from("write")),
                ])),
            ),
        ])));
    }
    upstreams.extend(new.into_iter().map(Value::Table));
    doc.insert("upstreams".into(), Value::Array(upstreams));
    Ok(Some((doc, moved)))
}

/// The agent's entry `t` (from `[[a2a.agents]]`) takes the MCP upstream `name` bridging agent
/// `agent` when the two are one thing: the same name, or an agent served only through it (`only`:
/// no other MCP upstream names it).
fn mergeable(t: &Table, agent: &str, name: &str, only: bool) -> bool {
    let faces = t.get("expose").and_then(Value::as_array);
    let is_agent = t.get("card_url").is_some() && t.get("name").and_then(Value::as_str) == Some(agent);
    let unexposed = faces.is_some_and(Vec::is_empty);
    let bridged = faces.is_some_and(|f| f.contains(&"mcp".into()));
    is_agent && !bridged && (agent == name || unexposed && only)
}

/// `kind` first, as a reader expects it.
fn kind_first(kind: &str, rest: Table) -> Table {
    let mut t = Table::from_iter([("kind".to_string(), Value::from(kind))]);
    t.extend(rest);
    t
}

fn text(t: &Table, key: &str) -> String {
    t.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn take_array(doc: &mut Table, section: &str, key: &str) -> Result<Vec<Table>, String> {
    let Some(Value::Table(sec)) = doc.get_mut(section) else { return Ok(Vec::new()) };
    match sec.remove(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .into_iter()
            .map(|v| match v {
                Value::Table(t) => Ok(t),
                _ => Err(format!("{section}.{key} must be an array of tables ([[{section}.{key}]])")),
            })
            .collect(),
        Some(_) => Err(format!("{section}.{key} must be an array of tables ([[{section}.{key}]])")),
    }
}

fn put_array(doc: &mut Table, section: &str, key: &str, list: Vec<Table>) {
    if let Some(Value::Table(sec)) = doc.get_mut(section) {
        sec.insert(key.into(), Value::Array(list.into_iter().map(Value::Table).collect()));
    }
}

/// The `[[upstreams]]` entries of a migrated document, as TOML text for the warning, with the
/// values that may be secrets (an OAuth client secret, a child's environment) left out.
pub fn upstreams_text(doc: &Table) -> String {
    let mut entries = doc.get("upstreams").and_then(Value::as_array).cloned().unwrap_or_default();
    let hidden = || Value::from("…as in the file…");
    for entry in entries.iter_mut().filter_map(Value::as_table_mut) {
        if let Some(Value::Table(oauth)) = entry.get_mut("oauth")
            && oauth.contains_key("client_secret")
        {
            oauth.insert("client_secret".into(), hidden());
        }
        if let Some(Value::Table(env)) = entry.get_mut("env") {
            let names: Vec<String> = env.keys().cloned().collect();
            env.extend(names.into_iter().map(|k| (k, hidden())));
        }
    }
    toml::to_string(&Table::from_iter([("upstreams".to_string(), Value::Array(entries))])).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> (Table, Vec<String>) {
        let doc: Table = text.parse().unwrap();
        migrate(&doc).unwrap().unwrap_or_else(|| panic!("nothing moved"))
    }

    fn upstreams(doc: &Table) -> Vec<Table> {
        doc["upstreams"].as_array().into_iter().flatten().filter_map(|v| v.as_table().cloned()).collect()
    }

    #[test]
    fn a_file_in_the_new_form_is_left_alone() {
        let doc: Table =
            "[[upstreams]]\nkind = \"mcp\"\nname = \"a\"\nurl = \"http://x\"\n".parse().unwrap_or_default();
        assert!(matches!(migrate(&doc), Ok(None)));
    }

    #[test]
    fn a_bridge_of_two_entries_naming_each_other_becomes_one() {
        let (doc, moved) = run(concat!(
            "[[a2a.agents]]\nname = \"w\"\nkind = \"upstream\"\ncard_url = \"http://127.0.0.1:1/c\"\n",
            "[[a2a.agents]]\nname = \"e\"\nkind = \"echo\"\n",
            "[[mcp.upstreams]]\nname = \"w\"\nkind = \"a2a\"\nagent = \"w\"\noperations = { lookup = \"read_only\" }\n",
            "[[mcp.upstreams]]\nname = \"fs\"\ncommand = [\"x\"]\n",
            "[[mcp.upstreams]]\nname = \"say\"\nkind = \"a2a\"\nagent = \"e\"\n",
        ));
        assert_eq!(moved.len(), 4, "{moved:?}");
        let ups = upstreams(&doc);
        let names: Vec<_> = ups.iter().map(|u| text(u, "name")).collect();
        assert_eq!(names, ["demo", "w", "fs", "say"], "{ups:?}");
        assert_eq!(ups[1]["expose"], Value::Array(vec!["a2a".into(), "mcp".into()]));
        assert!(ups[1].contains_key("operations") && ups[1]["kind"].as_str() == Some("a2a"));
        assert_eq!(ups[2]["kind"].as_str(), Some("mcp"));
        assert_eq!(ups[3]["agent"].as_str(), Some("e"));
        let hosted = doc["a2a"]["agents"].as_array().map(Vec::len);
        assert_eq!(hosted, Some(1), "the echo agent stays where it was");
        assert_eq!(doc["a2a"]["default_agent"].as_str(), Some("w"), "the first agent stays the default");
    }

    #[test]
    fn an_unexposed_agent_two_upstreams_bridge_stays_an_entry_of_its_own() {
        let (doc, _) = run(concat!(
            "upstreams = []\n",
            "[[a2a.agents]]\nname = \"in\"\nkind = \"upstream\"\ncard_url = \"http://127.0.0.1:1/c\"\nexposed = false\n",
            "[[mcp.upstreams]]\nname = \"a\"\nkind = \"a2a\"\nagent = \"in\"\n",
            "[[mcp.upstreams]]\nname = \"b\"\nkind = \"a2a\"\nagent = \"in\"\n",
        ));
        let names: Vec<_> = upstreams(&doc).iter().map(|u| text(u, "name")).collect();
        assert_eq!(names, ["in", "a", "b"], "no demo where the file had none, and `in` keeps its name");
        let cfg = crate::config::Config::from_text(&toml::to_string(&doc).unwrap(), "t", std::iter::empty());
        assert!(cfg.is_ok_and(|c| c.mcp.upstreams.iter().all(|u| u.agent_name() == "in")));
    }

    #[test]
    fn the_warning_prints_no_secret() {
        let (doc, _) = run(concat!(
            "[[mcp.upstreams]]\nname = \"s\"\nurl = \"https://s.example/mcp\"\n",
            "oauth = { client_id = \"c\", client_secret = \"hunter2-secret\" }\n",
            "[[mcp.upstreams]]\nname = \"l\"\ncommand = [\"x\"]\nenv = { TOKEN = \"tok-secret\" }\n",
        ));
        let text = upstreams_text(&doc);
        assert!(!text.contains("hunter2") && !text.contains("tok-secret"), "{text}");
        assert!(text.contains("client_id = \"c\"") && text.contains("TOKEN"), "{text}");
        let written = toml::to_string(&doc).unwrap_or_default();
        assert!(written.contains("hunter2-secret"), "the file `config migrate` writes keeps them");
    }

    #[test]
    fn an_upstream_with_a_card_of_its_own_and_an_unexposed_agent_migrate() {
        let (doc, _) = run("[[mcp.upstreams]]\nname = \"h\"\nkind = \"a2a\"\ncard_url = \"http://127.0.0.1:1/c\"\n");
        let ups = upstreams(&doc);
        assert_eq!(ups[1]["card_url"].as_str(), Some("http://127.0.0.1:1/c"));
        assert_eq!(ups[1]["expose"], Value::Array(vec!["mcp".into()]));
        let (doc, _) = run(concat!(
            "[[a2a.agents]]\nname = \"in\"\nkind = \"upstream\"\ncard_url = \"http://127.0.0.1:1/c\"\nexposed = false\n",
            "[[mcp.upstreams]]\nname = \"out\"\nkind = \"a2a\"\nagent = \"in\"\n",
        ));
        let ups = upstreams(&doc);
        assert_eq!(ups.len(), 2, "{ups:?}");
        assert_eq!((text(&ups[1], "name"), ups[1]["expose"].clone()), ("out".into(), Value::Array(vec!["mcp".into()])));
    }
}
