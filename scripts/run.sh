#!/usr/bin/env bash
# Runs the gateway on the embedded default: SQLite and files under ./.switchyard, the sample
# configuration (config/switchyard.toml), listening on 127.0.0.1:8787, with the MCP fixture
# server as a sample stdio upstream. Builds both first (release; a few minutes the first time).
#
#   bash scripts/run.sh [extra `switchyard serve` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "error: cargo is not installed: install Rust 1.95 (rustup) first" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
cargo build --release -q -p switchyard -p switchyard-mcp-fixture
# The sample config's MCP upstream is the fixture server, spawned over stdio from PATH.
export PATH="$CARGO_TARGET_DIR/release:$PATH"
exec "$CARGO_TARGET_DIR/release/switchyard" --config config/switchyard.toml serve "$@"
