#!/usr/bin/env bash
# Runs the official A2A TCK (a2aproject/a2a-tck, branch 1.0-dev at 357c4a8) over all three
# transports (JSON-RPC, HTTP+JSON, gRPC), in two card profiles:
#   full: streaming + push notifications + extended card on (webhooks delivered to the TCK's
#         receiver on 127.0.0.1);
#   bare: all three off, to exercise the "not supported" errors.
# Against:
#   1. `switchyard serve` with the built-in `tck` agent on PostgreSQL;
#   2. an agent on the official Python SDK (a2a-sdk 1.3.0, tests/python/a2a_tck_agent.py) that
#      behaves as the TCK's system under test: directly, and exposed through the gateway
#      (`kind = "upstream"`, PostgreSQL) with the gateway's defaults.
# Every level runs (MUST, SHOULD, MAY). The gate: 0 failed MUST requirements for the built-in
# agent and for the SDK agent through the gateway, in each profile, and no requirement (any
# level) that passes directly may fail through the gateway (one the TCK skips there, because the
# gateway's card declares more, is listed). A side-by-side table is printed and
# written to <results-dir>/summary.txt (pytest's exit code also counts SHOULD/MAY: reported only).
#
#   conformance/a2a/run.sh [results-dir]        (default: $CARGO_TARGET_DIR/conformance/a2a)
#
# Needs: the debug gateway (`cargo build -p switchyard`), SWITCHYARD_TEST_PG (a PostgreSQL URL
# whose user may create databases; scripts/test.sh starts one), python3 >= 3.11 with venv, and
# SWITCHYARD_PY: a Python with a2a-sdk 1.3.0 (scripts/test.sh makes one; default
# $SWITCHYARD_TOOLS/py/bin/python).
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
py=${SWITCHYARD_PY:-$tools/py/bin/python}
"$py" -c 'import importlib.metadata as m; assert m.version("a2a-sdk") == "1.3.0"' 2>/dev/null \
  || { echo "run.sh: $py has no a2a-sdk 1.3.0 (scripts/test.sh makes that venv; or set SWITCHYARD_PY)" >&2; exit 2; }

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

# gateway <name> <on> <agents TOML>: starts `switchyard serve` on a fresh database with the
# TCK's error profile; sets $gw (pid) and $base (URL).
gateway() {
  local name=$1 on=$2 agents=$3
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
streaming = $on
push_notifications = $on
extended_card = $on
$agents
TOML
  RUST_LOG=${RUST_LOG:-warn} "$bin" --config "$work/$name.toml" serve --listen 127.0.0.1:0 \
    >"$work/$name.out" 2>"$work/$name.err" &
  gw=$!
  pids+=("$gw")
  base=$(wait_line "$work/$name.out" "switchyard ready: listening on ")
}

# tck <name> <url>: runs the TCK against <url>; its reports go to $results/<name>.
tck() {
  local name=$1 url=$2
  echo "== A2A TCK $commit: $name, against $url"
  rm -rf "$tck/reports"
  set +e
  (cd "$tck" && .venv/bin/python run_tck.py --sut-host "$url" -- --webhook-host 127.0.0.1) >"$work/$name.tck.txt" 2>&1
  local code=$?
  set -e
  rm -rf "${results:?}/$name" && mkdir -p "$results/$name"
  cp -r "$tck/reports/." "$results/$name/" 2>/dev/null || true
  cp "$work/$name.tck.txt" "$results/$name/tck-output.txt"
  echo "$code" >"$results/$name/exit-code"
  grep -E "passed|failed" "$work/$name.tck.txt" | tail -n 1 || true
}

for profile in full bare; do
  case $profile in
    full) on=true ;;
    bare) on=false ;;
  esac
  # 1. The built-in tck agent.
  gateway "builtin-$profile" "$on" $'name = "tck"\nkind = "tck"'
  tck "builtin-$profile" "$base"
  tail -n 30 "$work/builtin-$profile.err" >"$results/builtin-$profile/gateway-stderr.txt"
  stop "$gw"
  # 2. The SDK agent, directly and through the gateway (its defaults: message_dedupe "retries").
  "$py" "$root/tests/python/a2a_tck_agent.py" "$profile" >"$work/sdk-$profile.out" 2>"$work/sdk-$profile.err" &
  agent=$!
  pids+=("$agent")
  agent_url=$(wait_line "$work/sdk-$profile.out" "listening ")
  tck "sdk-direct-$profile" "$agent_url"
  gateway "sdk-gateway-$profile" "$on" "name = \"sdk\"
kind = \"upstream\"
card_url = \"$agent_url/.well-known/agent-card.json\""
  tck "sdk-gateway-$profile" "$base"
  tail -n 30 "$work/sdk-gateway-$profile.err" >"$results/sdk-gateway-$profile/gateway-stderr.txt"
  stop "$gw"
  stop "$agent"
done

mkdir -p "$results"
set +e
python3 - "$results" <<'PY'
import json, pathlib, sys
results = pathlib.Path(sys.argv[1])
LEVELS = ("MUST", "SHOULD", "MAY")

def load(name):
    try:
        report = json.loads((results / name / "compatibility.json").read_text())
    except (OSError, ValueError):
        return None
    return {rid: (r["level"], r["status"], r.get("errors", [])) for rid, r in report["per_requirement"].items()}

def counts(rep):
    if rep is None:
        return {l: "no report" for l in LEVELS}
    out = {}
    for l in LEVELS:
        st = [s for (lv, s, _) in rep.values() if lv == l]
        out[l] = f"{st.count('FAIL')} failed / {st.count('PASS')} passed"
    return out

rows = [
    ("built-in tck agent (gateway)", "builtin"),
    ("a2a-sdk agent, direct", "sdk-direct"),
    ("a2a-sdk agent, through the gateway", "sdk-gateway"),
]
lines = [f"A2A TCK 357c4a8 — every level, three transports", ""]
lines.append(f"{'target':<38}{'profile':<9}" + "".join(f"{l:<24}" for l in LEVELS))
bad = []
for profile in ("full", "bare"):
    reps = {key: load(f"{key}-{profile}") for _, key in rows}
    for label, key in rows:
        c = counts(reps[key])
        lines.append(f"{label:<38}{profile:<9}" + "".join(f"{c[l]:<24}" for l in LEVELS))
    for key in ("builtin", "sdk-gateway"):
        rep = reps[key]
        if rep is None:
            bad.append(f"{key}-{profile}: no compatibility.json")
            continue
        for rid, (lv, st, errs) in sorted(rep.items()):
            if lv == "MUST" and st == "FAIL":
                bad.append(f"{key}-{profile}: FAIL MUST {rid}: {errs[:2]}")
    direct, through = reps["sdk-direct"], reps["sdk-gateway"]
    if direct and through:
        # Through the gateway the card can declare more (the gateway delivers push itself), so a
        # requirement the TCK skips there is not a loss; one that fails is.
        for rid, (lv, st, _) in sorted(direct.items()):
            there = through.get(rid, (lv, "missing", []))
            if st == "PASS" and there[1] in ("FAIL", "missing"):
                bad.append(f"sdk-gateway-{profile}: {lv} {rid} passes directly but not through the gateway: {there[2][:2]}")
        skipped = sorted(rid for rid, (lv, st, _) in direct.items() if st == "PASS" and through.get(rid, ("", "", []))[1] not in ("PASS", "FAIL"))
        if skipped:
            lines.append(f"{'':<38}{profile:<9}tested directly, not through the gateway (its card declares more): {', '.join(skipped)}")
        fixed = sorted(rid for rid, (lv, st, _) in through.items() if st == "PASS" and direct.get(rid, ("", "", []))[1] == "FAIL")
        if fixed:
            lines.append(f"{'':<38}{profile:<9}passes only through the gateway: {', '.join(fixed)}")
lines.append("")
text = "\n".join(lines)
print(text)
(results / "summary.txt").write_text(text + "\n" + "\n".join(bad) + "\n")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
status=$?
set -e
if [ "$status" != 0 ]; then
  for f in "$results"/*/gateway-stderr.txt; do echo "-- $f (last 30 lines):"; cat "$f"; done
  exit 1
fi
echo "A2A TCK: 0 failed MUST requirements for the built-in agent and for the SDK agent through the gateway, in both profiles; nothing that passes directly fails through the gateway (reports in $results)"
