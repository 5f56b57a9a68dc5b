#!/usr/bin/env bash
# Runs the official MCP conformance suites on Switchyard through `switchyard conformance`:
# - server leg: the fixture upstream (switchyard-mcp-fixture over Streamable HTTP) directly and
#   through the gateway, side by side (`--compare`: the gateway's /mcp fronting the fixture, so
#   every scenario crosses the gateway's real path: catalog, durable tools/call, MRTR mediation,
#   tasks), both requirement sets (2026-07-28, 2025-11-25). Every scored scenario must pass in
#   both legs, nothing may pass directly and fail through the gateway, and the unscored tasks-*
#   failures through the gateway must be exactly those in tasks-baseline.txt (the baseline only
#   shrinks);
# - client leg with switchyard-mcp-conformance-client, the gateway's own upstream client and
#   OAuth code (authorization code + PKCE, CIMD/DCR/pre-registration, step-up, client
#   credentials): every scored scenario must pass;
# - MCP Skills (SEP-2640; extension scenarios, which run when named): the three server scenarios
#   against the gateway's own skills (`[[mcp.skills]]` = conformance/skills) and against a
#   fixture serving the same directory, directly and through the gateway (its skills under
#   skill://target/…), and the four client scenarios with the gateway's client (no prefetch;
#   digest, size and frontmatter verified on read).
#
#   conformance/mcp/run.sh [results-dir]        (default: $CARGO_TARGET_DIR/conformance/mcp)
#
# Needs the debug binaries (`cargo build -p switchyard -p switchyard-mcp-fixture
# -p switchyard-mcp-conformance-client`); the command installs the pinned suite and Node from npm
# into the tools cache on first use. Reports: <results-dir>/{server,client}/report.html and
# summary.json.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
bin=$target/debug
results=${1:-$target/conformance/mcp}
for b in switchyard switchyard-mcp-fixture switchyard-mcp-conformance-client; do
  [ -x "$bin/$b" ] || { echo "run.sh: $bin/$b is missing: cargo build -p $b" >&2; exit 2; }
done
work=$(mktemp -d /tmp/switchyard-mcp-conformance.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

. "$root/conformance/lib.sh"

"$bin/switchyard-mcp-fixture" --listen 127.0.0.1:0 >"$work/fixture.out" 2>"$work/fixture.err" &
pids+=($!)
fixture=$(wait_line "$work/fixture.out" "listening ")

# The runs are kept in a throw-away store; the reports stay in $results.
printf '[server]\ndata_dir = "%s"\n' "$work/data" >"$work/switchyard.toml"
conformance() { "$bin/switchyard" --config "$work/switchyard.toml" conformance "$@"; }

rc=0
# What the gateway needs to know of the fixture's tools beyond tools/list.
conformance mcp-server --url "$fixture" --compare --out "$results/server" \
  --baseline "$root/conformance/mcp/tasks-baseline.txt" \
  --upstream-toml 'operations = { slow_compute = "read_only", greet = "read_only" }' \
  --upstream-toml 'tasks = { failing_job = "required", test_tool_with_task = "required", greet = "forbidden" }' || rc=$?
conformance mcp-client --out "$results/client" -- "$bin/switchyard-mcp-conformance-client" || rc=$?

skills=(--scenario sep-2640-skills-enumeration --scenario sep-2640-skills-manifest --scenario sep-2640-skills-directory)
FIXTURE_SKILLS_DIR="$root/conformance/skills" "$bin/switchyard-mcp-fixture" --listen 127.0.0.1:0 \
  >"$work/skills-fixture.out" 2>"$work/skills-fixture.err" &
pids+=($!)
skills_fixture=$(wait_line "$work/skills-fixture.out" "listening ")
conformance mcp-server --url "$skills_fixture" --compare "${skills[@]}" --out "$results/skills-upstream" || rc=$?
cat >"$work/skills.toml" <<TOML
[server]
data_dir = "$work/skills-data"

[mcp]
anonymous = true

[[mcp.skills]]
name = "conformance"
path = "$root/conformance/skills"
TOML
RUST_LOG=${RUST_LOG:-warn} "$bin/switchyard" --config "$work/skills.toml" serve --listen 127.0.0.1:0 \
  >"$work/skills-gateway.out" 2>"$work/skills-gateway.err" &
pids+=($!)
skills_gateway=$(wait_line "$work/skills-gateway.out" "switchyard ready: listening on ")
conformance mcp-server --url "$skills_gateway/mcp" "${skills[@]}" --out "$results/skills-local" || rc=$?
conformance mcp-client --out "$results/skills-client" --scenario sep-2640-client-no-prefetch \
  --scenario sep-2640-client-verify-digest --scenario sep-2640-client-verify-size \
  --scenario sep-2640-client-verify-frontmatter -- "$bin/switchyard-mcp-conformance-client" || rc=$?
exit "$rc"
