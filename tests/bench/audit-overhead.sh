#!/usr/bin/env bash
# Benchmark: durable `write` invocations/s through the admin API with a [policy] that lets them
# run, the audit log on (every decision appended to this replica's hash chain before the call is
# admitted) next to the same gateway with it off as the baseline, alternating, in the same run.
# SQLite (the embedded default) unless BENCH_STORE_URL names a PostgreSQL database (each run then
# uses it as it is). Loopback only; bounded in time; cleans up after itself.
#
#   tests/bench/audit-overhead.sh [concurrency=16] [seconds=8] [rounds=2]
set -euo pipefail
conc=${1:-16}
secs=${2:-8}
rounds=${3:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
cd "$root"
cargo build --release -q -p switchyard -p switchyard-tests --bin switchyard --bin switchyard-loadgen
bin=$CARGO_TARGET_DIR/release
work=$(mktemp -d /tmp/switchyard-bench-audit.XXXXXX)
gw_pid=
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cat > "$work/policy.toml" <<'TOML'
[policy]
[[policy.rules]]
upstream = "demo"
operation = "count"
tier = "routine"
TOML

# One measured run with the audit log on ($1 = true) or off: prints writes/s and p50 ms.
measure() {
  rm -rf "$work/gw" && mkdir -p "$work/gw"
  env SWITCHYARD__AUDIT__ENABLED="$1" SWITCHYARD__ADMIN__TOKEN=bench-token-0123456789 RUST_LOG=warn \
    ${BENCH_STORE_URL:+SWITCHYARD_STORE_URL="$BENCH_STORE_URL"} \
    "$bin/switchyard" --config "$work/policy.toml" serve --listen 127.0.0.1:0 --data-dir "$work/gw" \
    > "$work/gw.out" 2> "$work/gw.err" &
  gw_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/gw.out" 2>/dev/null && break; sleep 0.1; done
  local base
  base=$(sed -n 's/^switchyard ready: listening on //p' "$work/gw.out")
  [ -n "$base" ] || { cat "$work/gw.err" >&2; echo "gateway did not start" >&2; exit 1; }
  "$bin/switchyard-loadgen" --base "$base" --token bench-token-0123456789 --concurrency "$conc" --seconds 2 --operation count >/dev/null
  "$bin/switchyard-loadgen" --base "$base" --token bench-token-0123456789 --concurrency "$conc" --seconds "$secs" --operation count \
    | python3 -c 'import json,sys; r=json.load(sys.stdin); print(round(r["per_second"], 1), round(r["p50_ms"], 2))'
  kill "$gw_pid"; wait "$gw_pid" 2>/dev/null || true; gw_pid=
}

off=(); on=()
for _ in $(seq "$rounds"); do
  read -r rate p50 < <(measure false); off+=("$rate"); echo "audit off: $rate writes/s (p50 $p50 ms)"
  read -r rate p50 < <(measure true); on+=("$rate"); echo "audit on:  $rate writes/s (p50 $p50 ms)"
done
python3 - "$conc" "${off[*]}" "${on[*]}" <<'PY'
import sys, statistics
conc, off, on = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"concurrency={conc} median writes/s: audit off {statistics.median(off):.0f}, on {statistics.median(on):.0f}; "
      f"ratio on/off {statistics.median(on) / statistics.median(off):.2f}")
PY
