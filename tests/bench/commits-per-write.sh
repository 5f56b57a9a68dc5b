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

# shellcheck source=tests/bench/pg-cluster.sh
. "$root/tests/bench/pg-cluster.sh"
commits() { psql -qAt -d "$admin_url" -c "SELECT sum(xact_commit) FROM pg_stat_database"; }

printf '%-6s %-5s %10s %10s %14s\n' round feed writes 'writes/s' 'commits/write'
for round in $(seq "$rounds"); do
  for feed in true false; do
    start_gateway "$(pg_url "bench_${round}_$feed")" "$feed"
    load() { "$bin/switchyard-loadgen" --base "$base" --token "$token" --concurrency "$conc" --seconds "$1" --operation count; }
    load 2 >/dev/null
    before=$(commits)
    result=$(load "$secs")
    sleep 1 # the statistics of the last transactions reach pg_stat_database
    after=$(commits)
    stop_gateway
    echo "$result" | python3 -c '
import json, sys
r = json.load(sys.stdin)
n, rate, c = r["completed"], r["per_second"], int(sys.argv[3]) - int(sys.argv[2])
print(f"{sys.argv[1]:<6} {sys.argv[4]:<5} {n:>10} {rate:>10.0f} {c / n:>14.2f}")
' "$round" "$before" "$after" "$feed"
  done
done
