//! The documentation matches the tree: the README is short and reaches every page of `docs/`,
//! every relative link and anchor resolves, every repository path and `switchyard` command (with
//! its flags) named in code still exists, and the README's quick starts run exactly as written
//! against the real binary.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use switchyard_tests::gateway::binary;

const README_MAX_LINES: usize = 250;
/// Top-level folders whose paths, named in code, must exist.
const TREE: [&str; 10] = [
    "config/",
    "deploy/",
    "scripts/",
    "tests/",
    "conformance/",
    "docs/",
    "migrations/",
    "gateway/",
    "adapters/",
    "artifacts/",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every page under docs/, relative to the root.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap_or_else(|e| panic!("docs/: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| PathBuf::from("docs").join(p.file_name().unwrap_or_default()))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fenced code block: its info string and lines.
struct Block {
    lang: String,
    lines: Vec<String>,
}

/// A page split into prose lines and code blocks.
struct Page {
    prose: Vec<String>,
    blocks: Vec<Block>,
}

fn parse(text: &str) -> Page {
    let (mut prose, mut blocks, mut open): (Vec<String>, Vec<Block>, Option<Block>) = (vec![], vec![], None);
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                open = Some(Block { lang: line.trim_start().trim_start_matches('`').trim().to_string(), lines: vec![] })
            }
            (Some(_), true) => blocks.extend(open.take()),
            (Some(b), false) => b.lines.push(line.to_string()),
            (None, false) => prose.push(line.to_string()),
        }
    }
    assert!(open.is_none(), "a code block is not closed");
    Page { prose, blocks }
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation other than `-` and `_`
/// dropped; repeats get `-1`, `-2`, …
fn anchors(page: &Page) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for line in &page.prose {
        let Some(title) = line.strip_prefix('#').map(|l| l.trim_start_matches('#')) else { continue };
        let text = title.trim().replace('`', "");
        let slug: String = text
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    out
}

/// The targets of the Markdown links `[text](target)` on a prose line (inline code skipped).
fn links(line: &str) -> Vec<String> {
    let line: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
    let mut out = vec![];
    let mut rest = line.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// The inline code spans of a prose line.
fn inline_code(line: &str) -> Vec<String> {
    line.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_readme_is_short_and_reaches_every_page() {
    let readme = read(&root().join("README.md"));
    let n = readme.lines().count();
    assert!(n <= README_MAX_LINES, "README.md has {n} lines; at most {README_MAX_LINES}: move the rest to docs/");
    for word in ["issue 1", "issue 2", "issue 3", "issue 4", "issue 5", "issue 6", "issue 7", "issue 8", "issue 9"] {
        assert!(!readme.to_lowercase().contains(word), "README.md names an issue (`{word}…`): that is history");
    }
    let all = pages();
    let mut reached = BTreeSet::from([PathBuf::from("README.md")]);
    let mut queue = VecDeque::from([PathBuf::from("README.md")]);
    while let Some(page) = queue.pop_front() {
        let parsed = parse(&read(&root().join(&page)));
        for target in parsed.prose.iter().flat_map(|l| links(l)) {
            let file = target.split('#').next().unwrap_or_default();
            if !file.ends_with(".md") || file.contains("://") {
                continue;
            }
            let next = normalize(&page.parent().unwrap_or(Path::new("")).join(file));
            if all.contains(&next) && reached.insert(next.clone()) {
                queue.push_back(next);
            }
        }
    }
    let unreached: Vec<_> = all.iter().filter(|p| !reached.contains(*p)).collect();
    assert!(unreached.is_empty(), "pages no link from README.md reaches: {unreached:?}");
}

/// `a/b/../c` → `a/c`, relative to the root.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let parsed: HashMap<PathBuf, Page> =
        pages().into_iter().map(|p| (p.clone(), parse(&read(&root().join(&p))))).collect();
    let mut broken = vec![];
    for (page, doc) in &parsed {
        for target in doc.prose.iter().flat_map(|l| links(l)) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                page.clone()
            } else {
                normalize(&page.parent().unwrap_or(Path::new("")).join(file))
            };
            if !root().join(&path).exists() {
                broken.push(format!("{}: {target} (no such file)", page.display()));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            let headings = match parsed.get(&path) {
                Some(doc) => anchors(doc),
                None if path.extension().is_some_and(|x| x == "md") => anchors(&parse(&read(&root().join(&path)))),
                None => {
                    broken.push(format!("{}: {target} (an anchor into a file that is not Markdown)", page.display()));
                    continue;
                }
            };
            if !headings.contains(anchor) {
                broken.push(format!("{}: {target} (no heading `{anchor}` in {})", page.display(), path.display()));
            }
        }
    }
    broken.sort();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The repository paths a piece of code names (`config/…`, `tests/…`, …); placeholders skipped.
fn tree_paths(code: &str) -> Vec<String> {
    code.split(|c: char| c.is_whitespace() || "`'\"(),=[]<>|;".contains(c))
        .map(|t| t.trim_end_matches(['.', ':', ',']))
        .filter(|t| TREE.iter().any(|d| t.starts_with(d)))
        .filter(|t| !t.contains(['…', '*', '{', '$', '<']) && !t.contains("..."))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_path_named_in_code_exists() {
    let mut missing = vec![];
    for page in pages() {
        let doc = parse(&read(&root().join(&page)));
        let code = doc.blocks.iter().flat_map(|b| b.lines.clone()).chain(doc.prose.iter().flat_map(|l| inline_code(l)));
        for path in code.flat_map(|c| tree_paths(&c)) {
            let path = path.split(':').next().unwrap_or_default().to_string();
            if !root().join(&path).exists() {
                missing.push(format!("{}: {path}", page.display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "paths named in the docs that do not exist:\n{}", missing.join("\n"));
}

/// `switchyard <chain…> --help`, cached.
struct Help(HashMap<Vec<String>, String>);

impl Help {
    fn of(&mut self, chain: &[String]) -> &str {
        self.0.entry(chain.to_vec()).or_insert_with(|| {
            let out = Command::new(binary()).args(chain).arg("--help").output().unwrap_or_else(|e| panic!("{e}"));
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    }

    /// The subcommands `switchyard <chain…>` lists.
    fn subcommands(&mut self, chain: &[String]) -> Vec<String> {
        let help = self.of(chain);
        let Some((_, list)) = help.split_once("Commands:\n") else { return vec![] };
        list.lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    }

    fn has_flag(&mut self, chain: &[String], flag: &str) -> bool {
        let help = self.of(chain);
        help.match_indices(flag).any(|(i, _)| {
            help[i + flag.len()..].chars().next().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-'))
        })
    }
}

/// A subcommand-like word: `approvals`, `mcp-server`, `a2a`.
fn is_word(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_lowercase())
        && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A synopsis split at its ` | ` outside brackets: `a [--x | --y] | b` → `a [--x | --y]`, `b`.
fn top_level_alternatives(text: &str) -> Vec<String> {
    let (mut parts, mut current, mut depth) = (vec![], String::new(), 0i32);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            '|' if depth == 0 && i > 0 && chars[i - 1] == ' ' && chars.get(i + 1) == Some(&' ') => {
                parts.push(std::mem::take(&mut current));
                i += 1;
                continue;
            }
            _ => {}
        }
        current.push(chars[i]);
        i += 1;
    }
    parts.push(current);
    parts
}

/// Where the word `switchyard` at byte `at` of a code line is a command being run: at the
/// start of the line or of a shell command (`$(`, `&&`, `;`, `|`, a `$ ` prompt), or as a path
/// to the built binary (`…/release/switchyard`).
fn runs_command(line: &str, at: usize) -> bool {
    let before = line[..at].trim_end();
    if before.is_empty() || ["$(", "&&", ";", "|", "$"].iter().any(|s| before.ends_with(s)) {
        return true;
    }
    let token = line[..at].rsplit(char::is_whitespace).next().unwrap_or_default();
    !token.contains('=') && ["release/", "debug/", "bin/"].iter().any(|d| token.ends_with(d))
}

/// Checks one mention `switchyard …` (the text after the word); returns what is wrong.
fn check_command(help: &mut Help, rest: &str) -> Vec<String> {
    let mut errors = vec![];
    let mut chain: Vec<String> = vec![];
    for (n, part) in top_level_alternatives(rest).iter().enumerate() {
        // After ` | `, a sibling subcommand (`list | approve`), else the same command's
        // alternative arguments (`applied … | not-applied …`).
        let previous = chain.clone();
        if n > 0 {
            chain.pop();
        }
        let mut tokens = part.split_whitespace().peekable();
        let mut in_chain = true;
        while let Some(token) = tokens.next() {
            let token = token.trim_matches(['[', ']', '(', ')', '`', '"', '\'']);
            if token == "--config" || token == "-c" {
                tokens.next();
                continue;
            }
            if token == "--" || token.starts_with('#') {
                break;
            }
            if let Some(flag) = token.strip_prefix("--").map(|f| f.split('=').next().unwrap_or_default()) {
                if !flag.is_empty() && !help.has_flag(&chain, &format!("--{flag}")) {
                    errors.push(format!("`switchyard {}` has no --{flag}", chain.join(" ")));
                }
                continue;
            }
            if !in_chain {
                continue;
            }
            let words: Vec<&str> = token.split('|').collect();
            if !words.iter().all(|w| is_word(w)) {
                in_chain = false;
                continue;
            }
            let known = help.subcommands(&chain);
            if known.is_empty() {
                in_chain = false;
                continue;
            }
            match words.iter().find(|w| !known.iter().any(|k| k == *w)) {
                Some(unknown) if n == 0 => {
                    errors.push(format!("`switchyard {}` has no subcommand `{unknown}`", chain.join(" ")));
                    in_chain = false;
                }
                Some(_) => {
                    chain = previous.clone();
                    in_chain = false;
                }
                None => chain.push(words[0].to_string()),
            }
        }
    }
    errors
}

#[test]
fn every_switchyard_command_in_the_docs_exists() {
    let mut help = Help(HashMap::new());
    let mut errors = vec![];
    for page in pages() {
        let doc = parse(&read(&root().join(&page)));
        let shell = doc.blocks.iter().filter(|b| ["", "bash", "sh", "console", "text"].contains(&b.lang.as_str()));
        let code: Vec<String> =
            shell.flat_map(|b| b.lines.clone()).chain(doc.prose.iter().flat_map(|l| inline_code(l))).collect();
        for line in code {
            let mut from = 0;
            while let Some(i) = line[from..].find("switchyard ") {
                let at = from + i;
                from = at + "switchyard ".len();
                if runs_command(&line, at) {
                    let rest = &line[from..];
                    for e in check_command(&mut help, rest) {
                        errors.push(format!("{}: {e}: {}", page.display(), line.trim()));
                    }
                }
            }
        }
    }
    errors.sort();
    errors.dedup();
    assert!(errors.is_empty(), "commands in the docs the binary does not have:\n{}", errors.join("\n"));
}

/// A quick start of the README: the gateways it starts and the script it runs against them.
struct QuickStart {
    title: String,
    servers: Vec<Vec<String>>,
    /// The calling terminal's lines; `#=>` lines are expectations of the output since the last one.
    script: Vec<String>,
}

fn quick_starts(readme: &str) -> (Vec<String>, Vec<QuickStart>) {
    let section =
        readme.split("\n## Quick starts\n").nth(1).unwrap_or_else(|| panic!("README has no `## Quick starts`"));
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut parts = section.split("\n### ");
    let prelude: Vec<String> =
        parse(parts.next().unwrap_or_default()).blocks.into_iter().flat_map(|b| b.lines).collect();
    let starts = parts
        .map(|part| {
            let title = part.lines().next().unwrap_or_default().to_string();
            let (mut servers, mut script) = (vec![], vec![]);
            for block in parse(part).blocks {
                for line in block.lines {
                    match line.strip_prefix("bash scripts/run.sh") {
                        Some(args) => servers.push(args.split_whitespace().map(str::to_string).collect()),
                        None => script.push(line),
                    }
                }
            }
            QuickStart { title, servers, script }
        })
        .collect();
    (prelude, starts)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A gateway started as `scripts/run.sh` would start it; killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Copies `from` to `to` (recursively), with `edit` applied to every file's text.
fn copy_tree(from: &Path, to: &Path, edit: &dyn Fn(&str) -> String) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{e}")).filter_map(Result::ok) {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst, edit);
        } else {
            std::fs::write(&dst, edit(&read(&src))).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// Every quick start of the README, as written: its `scripts/run.sh` lines start the binary the
/// test command built (debug, not release) with the same configuration and flags, in a fresh
/// directory holding a copy of `config/`; its other lines run in one `bash` with that binary
/// and the MCP fixture on PATH; every `#=>` fragment must be in the output of the commands
/// before it. The ports of the text (8787, 9000) are replaced by free ones, so the test can run
/// beside anything. Each quick start must be done within a minute.
#[test]
fn the_quick_starts_run_as_written() {
    let bin_dir = binary().parent().map(Path::to_path_buf).unwrap_or_default();
    assert!(
        bin_dir.join("switchyard-mcp-fixture").exists(),
        "switchyard-mcp-fixture is missing next to the gateway: cargo build -p switchyard-mcp-fixture"
    );
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let (prelude, starts) = quick_starts(&read(&root().join("README.md")));
    assert_eq!(starts.len(), 3, "three quick starts: {:?}", starts.iter().map(|s| &s.title).collect::<Vec<_>>());
    for start in starts {
        let (p1, p2) = (free_port(), free_port());
        let ports = move |s: &str| {
            s.replace("127.0.0.1:8787", &format!("127.0.0.1:{p1}"))
                .replace("127.0.0.1:9000", &format!("127.0.0.1:{p2}"))
        };
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&root().join("config"), &dir.path().join("config"), &ports);
        let t0 = Instant::now();
        let _servers: Vec<Server> =
            start.servers.iter().map(|args| serve(dir.path(), &path, args, p1, &ports)).collect();

        let (mut script, mut expected) = (vec!["set -eo pipefail".to_string()], vec![]);
        script.extend(prelude.iter().map(|l| ports(l)));
        for line in &start.script {
            match line.strip_prefix("#=>") {
                Some(fragment) => {
                    script.push(format!("echo '@@expect {}'", expected.len()));
                    expected.push(ports(fragment.trim()));
                }
                None => script.push(ports(line)),
            }
        }
        let out = Command::new("timeout")
            .args(["60", "bash", "-c", &script.join("\n")])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env_remove("SWITCHYARD_CONFIG")
            .output()
            .unwrap_or_else(|e| panic!("bash: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let report = format!("{}\nstdout:\n{stdout}\nstderr:\n{}", start.title, String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "the quick start failed: {report}");
        // The output of the commands before each `#=>` line; adjacent `#=>` lines share it.
        let (mut rest, mut last): (&str, &str) = (&stdout, "");
        for (n, fragment) in expected.iter().enumerate() {
            let (before, after) =
                rest.split_once(&format!("@@expect {n}\n")).unwrap_or_else(|| panic!("no mark {n}: {report}"));
            if !before.is_empty() {
                last = before;
            }
            assert!(last.contains(fragment.as_str()), "`{fragment}` is not in the output of its command: {report}");
            rest = after;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{} took {:?}", start.title, t0.elapsed());
    }
}

/// Starts `switchyard --config <CONFIG> serve <flags>` as `scripts/run.sh <args>` would, and waits
/// for its ready line.
fn serve(dir: &Path, path: &str, args: &[String], port: u16, ports: &dyn Fn(&str) -> String) -> Server {
    let (config, flags) = match args.split_first() {
        Some((c, rest)) if c.ends_with(".toml") => (c.clone(), rest.to_vec()),
        _ => ("config/switchyard.toml".to_string(), args.to_vec()),
    };
    let mut flags: Vec<String> = flags.iter().map(|f| ports(f)).collect();
    if !flags.iter().any(|f| f == "--listen") {
        flags.extend(["--listen".to_string(), format!("127.0.0.1:{port}")]);
    }
    let mut child = Command::new(binary())
        .args(["--config", &config, "serve"])
        .args(&flags)
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("SWITCHYARD_CONFIG")
        .env_remove("SWITCHYARD_STORE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("switchyard ready") {
                let _ = tx.send(());
            }
        }
    });
    let server = Server(child);
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("`scripts/run.sh {}` was not ready in 20 s", args.join(" ")));
    server
}

/// Every TOML example in the docs is a configuration the gateway accepts as it is
/// (`switchyard validate-config`): a renamed or removed key fails here.
#[test]
fn every_toml_example_is_a_valid_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let mut failed = vec![];
    for page in pages() {
        let doc = parse(&read(&root().join(&page)));
        for (n, block) in doc.blocks.iter().filter(|b| b.lang == "toml").enumerate() {
            let file = dir.path().join(format!("example-{n}.toml"));
            std::fs::write(&file, block.lines.join("\n")).unwrap();
            // A secret an example names by environment variable (`*_env = "NAME"`) is set.
            let secrets = block.lines.iter().flat_map(|l| l.split(',')).filter_map(|kv| {
                let (key, value) = kv.split_once('=')?;
                key.trim().ends_with("_env").then(|| value.trim().trim_matches(['"', ' ', '}']).to_string())
            });
            let out = Command::new(binary())
                .arg("validate-config")
                .arg(&file)
                .current_dir(dir.path())
                .env_remove("SWITCHYARD_CONFIG")
                .envs(secrets.map(|name| (name, "example-secret".to_string())))
                .output()
                .unwrap();
            if !out.status.success() {
                let first = block.lines.iter().find(|l| !l.trim().is_empty()).cloned().unwrap_or_default();
                failed.push(format!(
                    "{} (toml block {}, `{first}`): {}",
                    page.display(),
                    n + 1,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    assert!(failed.is_empty(), "TOML examples the gateway refuses:\n{}", failed.join("\n"));
}
