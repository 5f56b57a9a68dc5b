#!/usr/bin/env bash
# Runs the official A2A TCK (a2aproject/a2a-tck, branch 1.0-dev at 357c4a8) against
# `switchyard serve` with the built-in `tck` agent on PostgreSQL, over all three transports
# (JSON-RPC, HTTP+JSON, gRPC), in two card profiles:
#   full: streaming + push notifications + extended card on (webhooks delivered to the TCK's
#         receiver on 127.0.0.1);
#   bare: all three off, to exercise the "not supported" errors.
# Every level runs (MUST, SHOULD, MAY); the gate is 0 failed MUST requirements in each
# profile's compatibility.json (pytest's exit code also counts SHOULD/MAY and is reported only).
#
#   conformance/a2a/run.sh [results-dir]        (default: $CARGO_TARGET_DIR/conformance/a2a)
#
# Needs: the debug gateway (`cargo build -p switchyard`), SWITCHYARD_TEST_PG (a PostgreSQL URL
# whose user may create databases; scripts/test.sh starts one), python3 >= 3.11 with venv.
# The TCK comes from, in order: A2A_TCK_DIR (a checkout of 357c4a8), the tools cache
# ($SWITCHYARD_TOOLS/a2a-tck-357c4a8, filled by an earlier run), or A2A_TCK_GIT (any git
# repository or URL holding that commit, e.g. a clone of a2aproject/a2a-tck), which
# is exported into the tools cache with its own venv (PyPI). With none of them this leg is
# skipped, loudly, and exits 0; SWITCHYARD_REQUIRE_TCK=1 makes that an error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
tools=${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}
results=${1:-$target/conformance/a2a}
commit=357c4a8
bin=${SWITCHYARD_BIN:-$target/debug/switchyard}
[ -x "$bin" ] || { echo "run.sh: $bin is missing: cargo build -p switchyard" >&2; exit 2; }
pg=${SWITCHYARD_TEST_PG:?run.sh: set SWITCHYARD_TEST_PG to a PostgreSQL URL (scripts/test.sh starts one)}

tck=${A2A_TCK_DIR:-$tools/a2a-tck-$commit}
skip() {
  printf '\n*** SKIPPED: the A2A TCK leg did not run: %s ***\n' "$1" >&2
  printf '*** Set A2A_TCK_DIR to a checkout of a2aproject/a2a-tck at %s, or A2A_TCK_GIT to a repository holding it. ***\n\n' "$commit" >&2
  [ "${SWITCHYARD_REQUIRE_TCK:-0}" = 1 ] && exit 2
  exit 0
}
if [ ! -f "$tck/run_tck.py" ]; then
  [ -n "${A2A_TCK_DIR:-}" ] && skip "A2A_TCK_DIR=$A2A_TCK_DIR has no run_tck.py"
  src=${A2A_TCK_GIT:-}
  [ -n "$src" ] || skip "no TCK in $tck and A2A_TCK_GIT is not set"
  rm -rf "$tck.tmp" && mkdir -p "$tck.tmp"
  if git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "exporting the A2A TCK at $commit from $src"
    git -C "$src" archive "$commit" | tar -x -C "$tck.tmp"
  else
    echo "cloning the A2A TCK from $src at $commit"
    git clone -q "$src" "$tck.tmp/repo" || { rm -rf "$tck.tmp"; skip "cannot clone $src"; }
    git -C "$tck.tmp/repo" archive "$commit" | tar -x -C "$tck.tmp" || { rm -rf "$tck.tmp"; skip "$src has no commit $commit"; }
    rm -rf "$tck.tmp/repo"
  fi
  rm -rf "$tck" && mv "$tck.tmp" "$tck"
fi
if [ ! -f "$tck/.venv/.switchyard-installed" ]; then
  python3 -c 'import sys; assert sys.version_info >= (3, 11)' \
    || { echo "run.sh: the A2A TCK needs Python >= 3.11" >&2; exit 2; }
  python3 -m venv "$tck/.venv" && "$tck/.venv/bin/pip" install -q -e "$tck" \
    || { echo "run.sh: cannot install the TCK's dependencies from PyPI" >&2; exit 2; }
  touch "$tck/.venv/.switchyard-installed"
fi

work=$(mktemp -d /tmp/switchyard-a2a-tck.XXXXXX)
gw=""
dbs=()
cleanup() {
  [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null || true
  for db in "${dbs[@]}"; do psql -q "$pg" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

. "$root/conformance/lib.sh"

failed=0
for profile in full bare; do
  case $profile in
    full) on=true ;;
    bare) on=false ;;
  esac
  db=switchyard_tck_${profile}_$$
  psql -q "$pg" -c "CREATE DATABASE $db" >/dev/null
  dbs+=("$db")
  url=${pg/\/postgres\?/\/$db?}
  cat >"$work/$profile.toml" <<TOML
[server]
data_dir = "$work/$profile-data"

[store]
url = "$url"

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
  RUST_LOG=${RUST_LOG:-warn} "$bin" --config "$work/$profile.toml" serve --listen 127.0.0.1:0 \
    >"$work/$profile.out" 2>"$work/$profile.err" &
  gw=$!
  base=$(wait_line "$work/$profile.out" "switchyard ready: listening on ")
  echo "== A2A TCK $commit, profile $profile, against $base (PostgreSQL)"
  rm -rf "$tck/reports"
  set +e
  (cd "$tck" && .venv/bin/python run_tck.py --sut-host "$base" -- --webhook-host 127.0.0.1) >"$work/$profile.tck.txt" 2>&1
  code=$?
  set -e
  mkdir -p "$results/$profile"
  cp -r "$tck/reports/." "$results/$profile/" 2>/dev/null || true
  cp "$work/$profile.tck.txt" "$results/$profile/tck-output.txt"
  grep -E "passed|failed" "$work/$profile.tck.txt" | tail -n 1
  if ! python3 - "$results/$profile/compatibility.json" "$profile" "$code" <<'PY'
import json, sys
path, profile, code = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    report = json.load(open(path))
except OSError:
    print(f"{profile}: no compatibility.json (TCK exit {code})"); sys.exit(1)
by = {}
for rid, r in report["per_requirement"].items():
    by.setdefault(r["level"], {}).setdefault(r["status"], []).append(rid)
for level in ("MUST", "SHOULD", "MAY"):
    counts = {s: len(ids) for s, ids in sorted(by.get(level, {}).items())}
    print(f"{profile} {level}: {counts}")
bad = [f"{l} {rid}" for l in ("SHOULD", "MAY") for rid in by.get(l, {}).get("FAIL", [])]
if bad:
    print(f"{profile}: failing below MUST (reported, not gated): {bad}")
must_fail = by.get("MUST", {}).get("FAIL", [])
if must_fail:
    for rid in must_fail:
        print(f"FAIL {rid}: {report['per_requirement'][rid].get('errors', [])[:2]}")
    sys.exit(1)
PY
  then
    failed=1
    echo "-- gateway stderr (last 30 lines):"; tail -n 30 "$work/$profile.err"
  fi
  kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null || true
  gw=""
done
[ "$failed" = 0 ] && echo "A2A TCK: 0 failed MUST requirements in both profiles (reports in $results)"
exit "$failed"
