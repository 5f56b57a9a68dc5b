#!/usr/bin/env bash
# Benchmark: durable `write` invocations/s through the admin API on PostgreSQL, next to
# pgbench running a 2-insert transaction at the same concurrency against the same cluster,
# measured in the same run. Loopback only; bounded in time; cleans up after itself.
#
#   tests/bench/durable-writes-vs-pgbench.sh [concurrency=16] [seconds=10]
#
# The cluster runs with PostgreSQL's default durability (tests/bench/pg-cluster.sh).
set -euo pipefail
conc=${1:-16}
secs=${2:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
pgbin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
port=${BENCH_PG_PORT:-54391}

cargo build --release -q -p switchyard -p switchyard-tests --bin switchyard --bin switchyard-loadgen
bin=$CARGO_TARGET_DIR/release

# shellcheck source=tests/bench/pg-cluster.sh
. "$root/tests/bench/pg-cluster.sh"

# Baseline: pgbench, one transaction = BEGIN; INSERT; INSERT; COMMIT.
psql -q -d "$admin_url" -c "CREATE TABLE bench_a (id bigserial PRIMARY KEY, v text); CREATE TABLE bench_b (id bigserial PRIMARY KEY, v text);"
cat > "$work/two-inserts.sql" <<'SQL'
BEGIN;
INSERT INTO bench_a (v) VALUES ('x');
INSERT INTO bench_b (v) VALUES ('y');
COMMIT;
SQL
pg_tps=$(pgbench -n -M prepared -c "$conc" -j 2 -T "$secs" -f "$work/two-inserts.sql" "$admin_url" 2>/dev/null \
  | awk '/^tps = / {print $3; exit}')

# Switchyard on the same cluster, driven by the load generator.
start_gateway "$admin_url" "${BENCH_CHANGE_FEED:-true}"
"$bin/switchyard-loadgen" --base "$base" --token "$token" --concurrency "$conc" --seconds 2 --operation count >/dev/null
result=$("$bin/switchyard-loadgen" --base "$base" --token "$token" --concurrency "$conc" --seconds "$secs" --operation count)
sy_rate=$(echo "$result" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["per_second"], 1))')

echo "concurrency=$conc seconds=$secs"
echo "pgbench 2-insert tx/s:        $pg_tps"
echo "switchyard durable writes/s:  $sy_rate   $result"
python3 -c "print('ratio (switchyard / pgbench): %.2f' % ($sy_rate / $pg_tps))"
