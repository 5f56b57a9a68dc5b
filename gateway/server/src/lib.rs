//! The `switchyard` gateway binary: typed configuration, the CLI (one file per subcommand),
//! wiring of the engine to its store and upstreams, and the HTTP listener (health, readiness and
//! the admin API). Start at [`cli::main`], then [`app::App`].

pub mod admin;
pub mod api_error;
pub mod app;
pub mod artifacts_http;
pub mod auth;
pub mod cli;
pub mod config;
pub mod conformance;
pub mod console;
pub mod demo;
pub mod faults;
pub mod grants;
pub mod keys;
pub mod mcp_http;
pub mod metrics;
pub mod registry;
pub mod stdio;
pub mod telemetry;
pub mod tls;
