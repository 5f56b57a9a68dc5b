#!/usr/bin/env bash
# Runs the gateway on the embedded default: SQLite and files under ./.switchyard, listening on
# 127.0.0.1:8787, with the sample configuration (config/switchyard.toml) or the one named, and
# the MCP fixture server on PATH as a sample stdio upstream. Builds both first (release).
#
#   bash scripts/run.sh [CONFIG.toml] [extra `switchyard serve` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "error: cargo is not installed: install Rust 1.95 (rustup) first" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
cargo build --release -q -p switchyard -p switchyard-mcp-fixture
# The sample config's MCP upstream is the fixture server, spawned over stdio from PATH.
export PATH="$CARGO_TARGET_DIR/release:$PATH"
config=config/switchyard.toml
case "${1:-}" in *.toml) config=$1; shift ;; esac
[ -f "$config" ] || { echo "error: no configuration file $config" >&2; exit 1; }
exec "$CARGO_TARGET_DIR/release/switchyard" --config "$config" serve "$@"
