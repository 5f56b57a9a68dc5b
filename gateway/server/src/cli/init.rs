//! `switchyard init --bridge|--guard|--expose [FILE]`: write a commented starting configuration
//! for one job. The files are the quick starts' own (`config/quickstart/`), so what `init`
//! writes is what the README runs. `switchyard init --client NAME -- COMMAND…` prints the entry
//! of a desktop client's configuration that launches a server through `switchyard stdio`, and
//! `switchyard init --client NAME --connect URL` one that reaches a remote gateway through
//! `switchyard connect` (printed only: no file of the user's is changed).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("job").required(true).multiple(false)))]
pub struct Args {
    /// Bridge an MCP server's tools to A2A clients, and an A2A agent to MCP clients.
    #[arg(long, group = "job")]
    bridge: bool,
    /// Put approval in front of an MCP server's write tools.
    #[arg(long, group = "job")]
    guard: bool,
    /// Expose an internal A2A agent, with its own card, on every A2A binding.
    #[arg(long, group = "job")]
    expose: bool,
    /// Print the entry of a desktop client's MCP configuration that launches the server after
    /// `--` through `switchyard stdio` (printed only).
    #[arg(long, group = "job", value_enum, value_name = "CLIENT")]
    client: Option<Client>,
    /// With --client: the server's name in the client's list (default: the command's file name,
    /// or the remote's host).
    #[arg(long, requires = "client")]
    name: Option<String>,
    /// With --client: an entry that launches `switchyard connect URL` (a remote gateway's
    /// `/mcp`) instead of a local server.
    #[arg(long, requires = "client", conflicts_with = "command", value_name = "URL")]
    connect: Option<String>,
    /// Where to write it.
    #[arg(default_value = "switchyard.toml")]
    file: PathBuf,
    /// Replace the file if it exists.
    #[arg(long)]
    force: bool,
    /// With --client: the MCP server's command and arguments.
    #[arg(last = true, requires = "client", value_name = "COMMAND")]
    command: Vec<String>,
}

/// The desktop clients whose configuration format `init --client` knows.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Client {
    /// Claude Desktop (`claude_desktop_config.json`).
    ClaudeDesktop,
    /// Cursor (`~/.cursor/mcp.json`, or `.cursor/mcp.json` in a project).
    Cursor,
    /// VS Code (`.vscode/mcp.json` in a workspace, or the user profile's `mcp.json`).
    Vscode,
}

impl Client {
    /// Where the entry goes.
    fn file(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => {
                "claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/; Windows: %APPDATA%\\Claude\\)"
            }
            Client::Cursor => "~/.cursor/mcp.json, or .cursor/mcp.json in a project",
            Client::Vscode => ".vscode/mcp.json in the workspace, or mcp.json in your user profile",
        }
    }

    /// The configuration with one server, `name`, launching `args` through `switchyard`.
    fn entry(self, name: &str, switchyard: &str, args: &[String]) -> serde_json::Value {
        let server = serde_json::json!({ "command": switchyard, "args": args });
        match self {
            Client::ClaudeDesktop | Client::Cursor => serde_json::json!({ "mcpServers": { name: server } }),
            Client::Vscode => {
                let mut server = server;
                server["type"] = "stdio".into();
                serde_json::json!({ "servers": { name: server } })
            }
        }
    }
}

/// A name for the server from its command: the program's, or for a launcher (`npx`, `uvx`,
/// `python`, …) its first argument that is not a flag — a package's name without its scope and
/// version, or a script's without its extension.
fn server_name(command: &[String]) -> String {
    const LAUNCHERS: &[&str] = &["npx", "bunx", "pnpx", "uvx", "uv", "node", "deno", "python", "python3", "docker"];
    let stem = |s: &str| {
        let last = s.rsplit('/').next().unwrap_or(s);
        let last = last.split('@').find(|p| !p.is_empty()).unwrap_or(last);
        std::path::Path::new(last).file_stem().map_or_else(|| last.to_string(), |s| s.to_string_lossy().into_owned())
    };
    let program = command.first().map(|p| stem(p)).unwrap_or_default();
    let named = match LAUNCHERS.contains(&program.as_str()) {
        true => command.iter().skip(1).find(|a| !a.starts_with('-')).map(|a| stem(a)),
        false => None,
    };
    named.filter(|n| !n.is_empty()).unwrap_or(program)
}

/// The host a remote URL names, as a server's name.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', ':', '?']).next().unwrap_or(rest).to_string()
}

/// `init --client`: the entry, on stdout; where it goes, on stderr.
fn print_client(client: Client, name: Option<&str>, command: &[String], connect: Option<&str>) -> anyhow::Result<()> {
    let (args, default_name) = match connect {
        Some(url) => (vec!["connect".to_string(), url.to_string()], host_of(url)),
        None if command.is_empty() => anyhow::bail!(
            "give the server's command after `--` (switchyard init --client CLIENT -- COMMAND [ARG…]), or a remote \
             gateway with --connect URL"
        ),
        None => {
            let mut args = vec!["stdio".to_string(), "--".to_string()];
            args.extend(command.iter().cloned());
            (args, server_name(command))
        }
    };
    let name = name.map_or(default_name, str::to_string);
    // Desktop clients launch with a short PATH: the entry names this binary by its full path.
    let switchyard = std::env::current_exe().map_or_else(|_| "switchyard".into(), |p| p.display().to_string());
    println!("{}", serde_json::to_string_pretty(&client.entry(&name, &switchyard, &args))?);
    eprintln!("add `{name}` to {} (merge it with the servers already there)", client.file());
    Ok(())
}

const BRIDGE: &str = include_str!("../../../../config/quickstart/bridge.toml");
const GUARD: &str = include_str!("../../../../config/quickstart/guard.toml");
const EXPOSE: &str = include_str!("../../../../config/quickstart/expose.toml");

impl Args {
    fn template(&self) -> &'static str {
        if self.bridge {
            BRIDGE
        } else if self.guard {
            GUARD
        } else {
            EXPOSE
        }
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(client) = args.client {
        return print_client(client, args.name.as_deref(), &args.command, args.connect.as_deref());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if args.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = match options.open(&args.file) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            anyhow::bail!("{} exists: choose another file, or pass --force to replace it", args.file.display())
        }
        other => other.with_context(|| format!("cannot write {}", args.file.display()))?,
    };
    file.write_all(args.template().as_bytes()).with_context(|| format!("cannot write {}", args.file.display()))?;
    println!("wrote {}; run it with: switchyard --config {} serve", args.file.display(), args.file.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn a_client_entry_launches_the_server_through_switchyard_stdio() {
        let args = ["stdio".to_string(), "--".into(), "npx".into(), "server-x".into()];
        let claude = Client::ClaudeDesktop.entry("x", "/bin/switchyard", &args);
        assert_eq!(claude["mcpServers"]["x"]["command"], "/bin/switchyard");
        assert_eq!(claude["mcpServers"]["x"]["args"], serde_json::json!(["stdio", "--", "npx", "server-x"]));
        let vscode = Client::Vscode.entry("x", "/bin/switchyard", &args);
        assert_eq!(vscode["servers"]["x"]["type"], "stdio");
        assert!(print_client(Client::Cursor, None, &[], None).is_err(), "no command: a clear error");
        assert_eq!(host_of("https://gw.example.com:8443/mcp"), "gw.example.com");
        assert_eq!(host_of("http://127.0.0.1:8787/mcp"), "127.0.0.1");
        let name = |c: &[&str]| server_name(&c.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(name(&["npx", "-y", "@modelcontextprotocol/server-filesystem@1.2", "/tmp"]), "server-filesystem");
        assert_eq!(name(&["python3", "tools/fastmcp_peer.py"]), "fastmcp_peer");
        assert_eq!(name(&["/usr/local/bin/mcp-git", "--repo", "."]), "mcp-git");
    }

    /// Each template is a configuration `serve` accepts as it is, in the current form.
    #[test]
    fn every_template_loads() {
        for (name, text) in [("bridge", BRIDGE), ("guard", GUARD), ("expose", EXPOSE)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("switchyard.toml");
            std::fs::write(&path, text).unwrap();
            match Config::load(Some(&path), std::iter::empty()) {
                Ok(cfg) => assert!(cfg.deprecations.is_empty(), "{name}: {:?}", cfg.deprecations),
                Err(e) => panic!("{name}: {e}"),
            }
        }
    }
}
