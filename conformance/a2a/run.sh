#!/usr/bin/env bash
# Runs the official A2A TCK (a2aproject/a2a-tck, branch 1.0-dev at 357c4a8) through
# `switchyard conformance a2a`, over all three transports (JSON-RPC, HTTP+JSON, gRPC), every level
# (MUST scored), in two card profiles:
#   full: streaming + push notifications + extended card on (webhooks delivered to the TCK's
#         receiver on 127.0.0.1);
#   bare: all three off, to exercise the "not supported" errors.
# Against:
#   1. `switchyard serve` with the built-in `tck` agent on PostgreSQL: 0 failed MUST requirements;
#   2. an agent on the official Python SDK (a2a-sdk 1.3.0, tests/python/a2a_tck_agent.py) that
#      behaves as the TCK's system under test, directly and through the gateway side by side
#      (`--compare`: a gateway in the command's process, an `[[upstreams]]` entry of kind `a2a`, the gateway's
#      defaults but `message_dedupe = false`, see below): nothing that passes directly may fail
#      through the gateway, nothing may fail through it at all, and the SDK's own failures
#      directly are those in sdk-baseline.txt.
# Reports (report.html, summary.json, the TCK's own) in <results-dir>/<run>/.
#
#   conformance/a2a/run.sh [results-dir]        (default: $CARGO_TARGET_DIR/conformance/a2a)
#
# Needs: the debug gateway (`cargo build -p switchyard`), SWITCHYARD_TEST_PG (a PostgreSQL URL
# whose user may create databases; scripts/test.sh starts one), python3 >= 3.11 with venv, and
# SWITCHYARD_PY: a Python with a2a-sdk 1.3.0 (scripts/test.sh makes one; default
# $SWITCHYARD_TOOLS/py/bin/python).
# The TCK comes from, in order: A2A_TCK_DIR (a checkout of 357c4a8), the tools cache
# ($SWITCHYARD_TOOLS/a2a-tck-357c4a8, filled by an earlier run), or A2A_TCK_GIT (any git
# repository or URL holding that commit, e.g. a clone of a2aproject/a2a-tck), which the command
# exports into the tools cache with its own venv (PyPI). With none of them this leg is skipped,
# loudly, and exits 0; SWITCHYARD_REQUIRE_TCK=1 makes that an error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
tools=${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}
results=${1:-$target/conformance/a2a}
commit=357c4a8
bin=${SWITCHYARD_BIN:-$target/debug/switchyard}
[ -x "$bin" ] || { echo "run.sh: $bin is missing: cargo build -p switchyard" >&2; exit 2; }
pg=${SWITCHYARD_TEST_PG:?run.sh: set SWITCHYARD_TEST_PG to a PostgreSQL URL (scripts/test.sh starts one)}
py=${SWITCHYARD_PY:-$tools/py/bin/python}
"$py" -c 'import importlib.metadata as m; assert m.version("a2a-sdk") == "1.3.0"' 2>/dev/null \
  || { echo "run.sh: $py has no a2a-sdk 1.3.0 (scripts/test.sh makes that venv; or set SWITCHYARD_PY)" >&2; exit 2; }

if [ -z "${A2A_TCK_DIR:-}" ] && [ ! -f "$tools/a2a-tck-$commit/run_tck.py" ] && [ -z "${A2A_TCK_GIT:-}" ]; then
  printf '\n*** SKIPPED: the A2A TCK leg did not run: no TCK in %s and neither A2A_TCK_DIR nor A2A_TCK_GIT is set ***\n' "$tools/a2a-tck-$commit" >&2
  printf '*** Set A2A_TCK_DIR to a checkout of a2aproject/a2a-tck at %s, or A2A_TCK_GIT to a repository holding it. ***\n\n' "$commit" >&2
  [ "${SWITCHYARD_REQUIRE_TCK:-0}" = 1 ] && exit 2
  exit 0
fi

work=$(mktemp -d /tmp/switchyard-a2a-tck.XXXXXX)
pids=()
dbs=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  for db in "${dbs[@]}"; do psql -q "$pg" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

. "$root/conformance/lib.sh"

# stop <pid>: ends a process this script started.
stop() { kill "$1" 2>/dev/null && wait "$1" 2>/dev/null || true; }

# The runs are kept in a throw-away store; the reports stay in $results.
printf '[server]\ndata_dir = "%s"\n' "$work/runs" >"$work/conformance.toml"
# conformance <run name> <card url> <args…>: the TCK through the command.
conformance() {
  local name=$1 card=$2
  shift 2
  echo "== A2A TCK $commit: $name, against $card"
  "$bin" --config "$work/conformance.toml" conformance a2a --card-url "$card" --out "$results/$name" "$@"
}

# gateway <name> <on>: starts `switchyard serve` with the built-in tck agent on a fresh
# PostgreSQL database with the TCK's error profile; sets $gw (pid) and $base (URL).
gateway() {
  local name=$1 on=$2
  local db=switchyard_tck_${name//-/_}_$$
  psql -q "$pg" -c "CREATE DATABASE $db" >/dev/null
  dbs+=("$db")
  cat >"$work/$name.toml" <<TOML
[server]
data_dir = "$work/$name-data"

[store]
url = "${pg/\/postgres\?/\/$db?}"

[a2a]
error_profile = "tck"
anonymous = true
push = { allow_loopback = true }

[[a2a.agents]]
name = "tck"
kind = "tck"
streaming = $on
push_notifications = $on
extended_card = $on
TOML
  RUST_LOG=${RUST_LOG:-warn} "$bin" --config "$work/$name.toml" serve --listen 127.0.0.1:0 \
    >"$work/$name.out" 2>"$work/$name.err" &
  gw=$!
  pids+=("$gw")
  base=$(wait_line "$work/$name.out" "switchyard ready: listening on ")
}

failed=()
for profile in full bare; do
  case $profile in
    full) on=true ;;
    bare) on=false ;;
  esac
  # 1. The built-in tck agent.
  gateway "builtin-$profile" "$on"
  conformance "builtin-$profile" "$base/.well-known/agent-card.json" || {
    failed+=("builtin-$profile")
    echo "-- gateway stderr (last 30 lines):"
    tail -n 30 "$work/builtin-$profile.err"
  }
  stop "$gw"
  # 2. The SDK agent, directly and through the gateway (its defaults, but message_dedupe off:
  #    the TCK's task helpers send the same messageId and content again and again, each time
  #    expecting a new task, while the specification makes messageId "the unique identifier of
  #    the message" and lets an agent use it to detect duplicates (3.3.1); with dedupe on, every
  #    helper call after the first answers with the first task, and CORE-CANCEL-001,
  #    CORE-HIST-001..006 and CORE-MULTI-005 skip for want of a fresh INPUT_REQUIRED task).
  "$py" "$root/tests/python/a2a_tck_agent.py" "$profile" >"$work/sdk-$profile.out" 2>"$work/sdk-$profile.err" &
  agent=$!
  pids+=("$agent")
  agent_url=$(wait_line "$work/sdk-$profile.out" "listening ")
  conformance "sdk-$profile" "$agent_url/.well-known/agent-card.json" --compare \
    --baseline "$root/conformance/a2a/sdk-baseline.txt" \
    --upstream-toml "streaming = $on" --upstream-toml "push_notifications = $on" --upstream-toml "extended_card = $on" \
    --upstream-toml "message_dedupe = false" \
    || failed+=("sdk-$profile")
  stop "$agent"
done

echo
"$bin" --config "$work/conformance.toml" conformance list
if [ "${#failed[@]}" -ne 0 ]; then
  echo "A2A TCK: FAILED: ${failed[*]} (reports in $results)" >&2
  exit 1
fi
echo "A2A TCK: 0 failed MUST requirements for the built-in agent; the SDK agent fails nothing through the gateway and nothing that passes directly fails through it, in both profiles (reports in $results)"
