#!/usr/bin/env bash
# Every write-path benchmark side by side with its baseline, measured in the same run, and one
# table of the results (issue 18's measures). Loopback only; bounded in time; every process it
# starts is stopped, every directory removed.
#
#   tests/bench/run.sh [seconds=5]
#
# Needs what the test command installs: PostgreSQL's initdb/postgres/pgbench (PG_BIN, else the
# newest /usr/lib/postgresql/*/bin), psql, python3; the A2A row needs the venv with a2a-sdk
# (scripts/test.sh makes it in ~/.cache/switchyard-tools/py) and is skipped, saying so, without it.
# Each process needs a descriptor per open stream: 10,000 streams need `ulimit -n` >= 12,000.
set -euo pipefail
secs=${1:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
pgbin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
port=${BENCH_PG_PORT:-54392}
cd "$root"
cargo build --release -q -p switchyard -p switchyard-mcp-fixture -p switchyard-tests \
  --bin switchyard --bin switchyard-mcp-fixture --bin switchyard-loadgen --bin switchyard-mcp-bench \
  --bin switchyard-streams-bench --bin switchyard-a2a-bench
bin=$CARGO_TARGET_DIR/release
export SWITCHYARD_BIN=$bin/switchyard

# A throw-away cluster with PostgreSQL's default durability, for the rows that need one.
# shellcheck source=tests/bench/pg-cluster.sh
. "$root/tests/bench/pg-cluster.sh"
log() { echo "== $*" >&2; }

rows=()
row() { rows+=("$(printf '%-58s %16s %16s %9s' "$1" "$2" "$3" "$4")"); }

log "durable writes on PostgreSQL vs pgbench (2-insert transaction), c=16 and c=32"
for c in 16 32; do
  out=$(PG_BIN=$pgbin BENCH_PG_PORT=$((port + c)) bash tests/bench/durable-writes-vs-pgbench.sh "$c" "$secs")
  echo "$out" >&2
  pg=$(echo "$out" | sed -n 's/^pgbench 2-insert tx\/s: *//p')
  sy=$(echo "$out" | sed -n 's/^switchyard durable writes\/s: *\([0-9.]*\).*/\1/p')
  row "durable writes/s, PostgreSQL, c=$c (baseline: pgbench tx/s)" "$pg" "$sy" "$(python3 -c "print(f'{$sy/$pg:.2f}')")"
done

log "durable writes on SQLite, group commit off (baseline) and on, c=16"
out=$(bash tests/bench/durable-writes-sqlite.sh 16 "$secs" 1)
echo "$out" >&2
off=$(echo "$out" | sed -n 's/^group commit off: \([0-9.]*\).*/\1/p')
on=$(echo "$out" | sed -n 's/^group commit on:  \([0-9.]*\).*/\1/p')
row "durable writes/s, SQLite, c=16 (baseline: group commit off)" "$off" "$on" "$(python3 -c "print(f'{$on/$off:.2f}')")"

mcp_rows() { # $1 = store label, $2 = JSON line of switchyard-mcp-bench
  python3 - "$1" "$2" <<'PY'
import json, sys
label, r = sys.argv[1], json.loads(sys.argv[2])
for x in r["results"]:
    if x["era"] != "modern":
        continue
    kind = "read_only" if x["tool"] == "echo" else "write"
    d, g = x["direct"]["p50_ms"], x["gateway"]["p50_ms"]
    print(f"MCP tools/call p50 ms, {kind}, {label} (baseline: direct)|{d:.3f}|{g:.3f}|+{g - d:.3f}")
PY
}
log "MCP tools/call through the gateway vs directly (SQLite, then PostgreSQL)"
for store in sqlite postgres; do
  args=(--seconds 2 --concurrency 8)
  [ "$store" = postgres ] && args+=(--store-url "$(pg_url mcp_bench)")
  json=$("$bin/switchyard-mcp-bench" "${args[@]}" | tee /dev/stderr | tail -n 1)
  while IFS='|' read -r name a b r; do row "$name" "$a" "$b" "$r"; done < <(mcp_rows "$store" "$json")
done

py=${SWITCHYARD_PY:-$HOME/.cache/switchyard-tools/py/bin/python}
if [ -x "$py" ]; then
  log "A2A SendMessage to an internal agent (a2a-sdk) through the gateway vs directly"
  json=$(SWITCHYARD_PY=$py "$bin/switchyard-a2a-bench" --seconds "$secs" --concurrency 8 | tee /dev/stderr | tail -n 1)
  read -r d g < <(python3 -c 'import json,sys; r={x["target"]: x for x in json.loads(sys.argv[1])["results"]}; print(r["direct"]["p50_ms"], r["gateway"]["p50_ms"])' "$json")
  row "A2A SendMessage p50 ms, SQLite (baseline: direct)" "$d" "$g" "+$(python3 -c "print(f'{$g - $d:.3f}')")"
else
  log "SKIPPED the A2A row: no Python with a2a-sdk at $py (run scripts/test.sh once, or set SWITCHYARD_PY)"
fi

log "idle event streams: memory on SQLite (10,000 streams), database load on PostgreSQL (2,000 streams)"
json=$("$bin/switchyard-streams-bench" --streams 10000 --seconds "$secs" | tee /dev/stderr | tail -n 1)
read -r idle open per < <(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["rss_idle_kb"]/1024, r["rss_streams_kb"]/1024, r["rss_per_stream_kb"])' "$json")
row "gateway RSS MB: idle / with 10,000 open SSE streams" "$(printf %.1f "$idle")" "$(printf %.1f "$open")" "$(printf '%.1f kB/stream' "$per")"
# Rows of the database load and the unrelated call's p50 with 2,000 idle streams on PostgreSQL:
# $1 database name, $2 what the streams are (in the rows' labels), then extra bench flags.
stream_load_rows() {
  local db=$1 what=$2 json tx0 tx1 p0 p1 p2
  shift 2
  json=$("$bin/switchyard-streams-bench" "$@" --streams 2000 --seconds "$secs" --store-url "$(pg_url "$db")" | tee /dev/stderr | tail -n 1)
  read -r tx0 tx1 p0 p1 p2 < <(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(*r["db_tx_per_s"], *r["unrelated_p50_ms"])' "$json")
  row "PostgreSQL transactions/s: no streams / 2,000 idle $what" "$(printf %.1f "$tx0")" "$(printf %.1f "$tx1")" ""
  row "unrelated durable call p50 ms: no streams / 2,000 $what" "$(printf %.3f "$p0")" "$(printf %.3f "$p1")" "$(printf 'closed: %.3f' "$p2")"
}
stream_load_rows streams_bench streams
stream_load_rows streams_bench_a2a "A2A subscriptions" --kind a2a

echo
printf '%-58s %16s %16s %9s\n' "measure" "baseline" "switchyard" "ratio/+"
for r in "${rows[@]}"; do echo "$r"; done
