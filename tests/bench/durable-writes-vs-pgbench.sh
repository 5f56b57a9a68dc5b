#!/usr/bin/env bash
# Benchmark: durable `write` invocations/s through the admin API on PostgreSQL, next to
# pgbench running a 2-insert transaction at the same concurrency against the same cluster,
# measured in the same run. Loopback only; bounded in time; cleans up after itself.
#
#   tests/bench/durable-writes-vs-pgbench.sh [concurrency=16] [seconds=10]
#
# The cluster runs with PostgreSQL's default durability (fsync=on, synchronous_commit=on);
# BENCH_PG_OPTS adds server options for diagnosis, e.g. "-c synchronous_commit=off".
set -euo pipefail
conc=${1:-16}
secs=${2:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
pgbin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
port=${BENCH_PG_PORT:-54391}

cargo build --release -q -p switchyard -p switchyard-tests --bin switchyard --bin switchyard-loadgen
bin=$CARGO_TARGET_DIR/release

work=$(mktemp -d /tmp/switchyard-bench.XXXXXX)
chown postgres: "$work" 2>/dev/null || true
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
gw_pid=
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  as_pg "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

as_pg "$pgbin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --locale=C --no-instructions >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/data" -l "$work/pg.log" -w start \
  -o "-k $work -c listen_addresses=127.0.0.1 -p $port -c max_connections=300 ${BENCH_PG_OPTS:-}" >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres"

# Baseline: pgbench, one transaction = BEGIN; INSERT; INSERT; COMMIT.
psql -q -d "$url" -c "CREATE TABLE bench_a (id bigserial PRIMARY KEY, v text); CREATE TABLE bench_b (id bigserial PRIMARY KEY, v text);"
cat > "$work/two-inserts.sql" <<'SQL'
BEGIN;
INSERT INTO bench_a (v) VALUES ('x');
INSERT INTO bench_b (v) VALUES ('y');
COMMIT;
SQL
pg_tps=$(pgbench -n -M prepared -c "$conc" -j 2 -T "$secs" -f "$work/two-inserts.sql" "$url" 2>/dev/null \
  | awk '/^tps = / {print $3; exit}')

# Switchyard on the same cluster, driven by the load generator.
mkdir -p "$work/gw"
SWITCHYARD__STORE__CHANGE_FEED=${BENCH_CHANGE_FEED:-true} SWITCHYARD__ADMIN__TOKEN=bench-token-0123456789 SWITCHYARD__STORE__MAX_CONNECTIONS=$((conc * 2)) \
  RUST_LOG=warn "$bin/switchyard" serve --listen 127.0.0.1:0 --data-dir "$work/gw" --store "$url" \
  > "$work/gw.out" 2> "$work/gw.err" &
gw_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/gw.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^switchyard ready: listening on //p' "$work/gw.out")
[ -n "$base" ] || { cat "$work/gw.err"; echo "gateway did not start" >&2; exit 1; }
"$bin/switchyard-loadgen" --base "$base" --token bench-token-0123456789 --concurrency "$conc" --seconds 2 --operation count >/dev/null
result=$("$bin/switchyard-loadgen" --base "$base" --token bench-token-0123456789 --concurrency "$conc" --seconds "$secs" --operation count)
sy_rate=$(echo "$result" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["per_second"], 1))')

echo "concurrency=$conc seconds=$secs"
echo "pgbench 2-insert tx/s:        $pg_tps"
echo "switchyard durable writes/s:  $sy_rate   $result"
python3 -c "print('ratio (switchyard / pgbench): %.2f' % ($sy_rate / $pg_tps))"
