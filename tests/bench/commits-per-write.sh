#!/usr/bin/env bash
# Benchmark: PostgreSQL transactions committed per durable `write` through the admin API, and
# writes/s, with the change feed (LISTEN/NOTIFY) on and off, alternating, on one throw-away
# cluster in one run. The feed's notices are transactions of their own: this shows what they
# add. Loopback only; bounded in time; cleans up after itself.
#
#   tests/bench/commits-per-write.sh [concurrency=16] [seconds=5] [rounds=2]
set -euo pipefail
conc=${1:-16}
secs=${2:-5}
rounds=${3:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
pgbin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
port=${BENCH_PG_PORT:-54393}

(cd "$root" && cargo build --release -q -p switchyard -p switchyard-tests --bin switchyard --bin switchyard-loadgen)
bin=$CARGO_TARGET_DIR/release

work=$(mktemp -d /tmp/switchyard-commits.XXXXXX)
chown postgres: "$work" 2>/dev/null || true
as_pg() { (cd "$work" && if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi); }
gw_pid=
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  as_pg "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

as_pg "$pgbin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --locale=C --no-instructions >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/data" -l "$work/pg.log" -w start \
  -o "-k $work -c listen_addresses=127.0.0.1 -p $port -c max_connections=300" >/dev/null
admin="postgres://postgres@127.0.0.1:$port/postgres"
commits() { psql -qAt -d "$admin" -c "SELECT sum(xact_commit) FROM pg_stat_database"; }

printf '%-6s %-5s %10s %10s %14s\n' round feed writes 'writes/s' 'commits/write'
for round in $(seq "$rounds"); do
  for feed in true false; do
    db="bench_${round}_$feed"
    psql -q -d "$admin" -c "CREATE DATABASE $db"
    rm -rf "$work/gw" && mkdir -p "$work/gw"
    SWITCHYARD__STORE__CHANGE_FEED=$feed SWITCHYARD__ADMIN__TOKEN=bench-token-0123456789 \
      SWITCHYARD__STORE__MAX_CONNECTIONS=$((conc * 2)) RUST_LOG=warn \
      "$bin/switchyard" serve --listen 127.0.0.1:0 --data-dir "$work/gw" --store "postgres://postgres@127.0.0.1:$port/$db" \
      > "$work/gw.out" 2> "$work/gw.err" &
    gw_pid=$!
    for _ in $(seq 100); do grep -q "listening on" "$work/gw.out" 2>/dev/null && break; sleep 0.1; done
    base=$(sed -n 's/^switchyard ready: listening on //p' "$work/gw.out")
    [ -n "$base" ] || { cat "$work/gw.err"; echo "gateway did not start" >&2; exit 1; }
    load() { "$bin/switchyard-loadgen" --base "$base" --token bench-token-0123456789 --concurrency "$conc" --seconds "$1" --operation count; }
    load 2 >/dev/null
    before=$(commits)
    result=$(load "$secs")
    sleep 1 # the statistics of the last transactions reach pg_stat_database
    after=$(commits)
    kill "$gw_pid" && wait "$gw_pid" 2>/dev/null || true
    gw_pid=
    echo "$result" | python3 -c '
import json, sys
r = json.load(sys.stdin)
n, rate, c = r["completed"], r["per_second"], int(sys.argv[3]) - int(sys.argv[2])
print(f"{sys.argv[1]:<6} {sys.argv[4]:<5} {n:>10} {rate:>10.0f} {c / n:>14.2f}")
' "$round" "$before" "$after" "$feed"
  done
done
