#!/usr/bin/env bash
# Runs the gateway on the embedded default: SQLite and files under ./.switchyard, listening on
# 127.0.0.1:8787, with the sample configuration (config/switchyard.toml) or the one named, and
# the MCP fixture server on PATH as a sample stdio upstream. Builds both first: a development
# build (the one `scripts/test.sh` makes too, so after it this starts at once), or with
# --release the optimized one (for measuring; deploy with the container image, deploy/).
#
#   bash scripts/run.sh [--release] [CONFIG.toml] [extra `switchyard serve` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "error: cargo is not installed: install Rust 1.95 (rustup) first" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
profile=debug
if [ "${1:-}" = --release ]; then profile=release; shift; fi
config=config/switchyard.toml
case "${1:-}" in *.toml) config=$1; shift ;; esac
[ -f "$config" ] || { echo "error: no configuration file $config" >&2; exit 1; }
if [ "$profile" = release ]; then
  cargo build --release -q -p switchyard -p switchyard-mcp-fixture
else
  cargo build -q -p switchyard -p switchyard-mcp-fixture
fi
bin=$CARGO_TARGET_DIR/$profile
# The sample configurations' MCP upstream is the fixture server, spawned over stdio from PATH.
export PATH="$bin:$PATH"
echo "(the command line: export PATH=\"$bin:\$PATH\"; switchyard --help)" >&2
exec "$bin/switchyard" --config "$config" serve "$@"
