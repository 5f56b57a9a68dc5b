//! `switchyard config schema | reference | migrate FILE`: the configuration's JSON Schema, its
//! reference page (docs/configuration.md's generated part), and an older file rewritten into the
//! current form.

use std::path::PathBuf;

use anyhow::Context;

use crate::config::{migrate, reference};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print the JSON Schema of the configuration file (draft 2020-12).
    Schema,
    /// Print the reference of every section and key, as docs/configuration.md has it.
    Reference,
    /// Rewrite a file's older sections (`[[mcp.upstreams]]`, `[[a2a.agents]]` of kind
    /// `upstream`) into `[[upstreams]]`: printed, or written over FILE with `--write` (the old
    /// file kept as FILE.bak). Comments are not carried over.
    Migrate {
        file: PathBuf,
        #[arg(long)]
        write: bool,
    },
}

pub fn run(cmd: &Command) -> anyhow::Result<()> {
    match cmd {
        Command::Schema => println!("{}", serde_json::to_string_pretty(&reference::schema())?),
        Command::Reference => print!("{}", reference::markdown()),
        Command::Migrate { file, write } => {
            let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
            let doc: toml::Table = text.parse().with_context(|| format!("{} is not TOML", file.display()))?;
            let Some((new, moved)) = migrate::migrate(&doc).map_err(anyhow::Error::msg)? else {
                eprintln!("{}: already in the current form", file.display());
                return Ok(());
            };
            let out = format!(
                "# Rewritten by `switchyard config migrate` from the older form; comments were not carried over.\n{}",
                toml::to_string(&new)?
            );
            // The result must load as it is before it replaces anything.
            crate::config::Config::from_text(&out, &file.display().to_string(), std::iter::empty())
                .context("the rewritten configuration does not load")?;
            for line in &moved {
                eprintln!("{line}");
            }
            if *write {
                let backup = PathBuf::from(format!("{}.bak", file.display()));
                std::fs::copy(file, &backup).with_context(|| format!("cannot write {}", backup.display()))?;
                std::fs::write(file, out).with_context(|| format!("cannot write {}", file.display()))?;
                eprintln!("wrote {} (the old file is {})", file.display(), backup.display());
            } else {
                print!("{out}");
            }
        }
    }
    Ok(())
}
