#!/usr/bin/env bash
# Benchmark: durable `write` invocations/s through the admin API on SQLite (the embedded
# default, WAL, synchronous=FULL), with the store's group commit on, next to the same gateway
# with it off (one commit per change) as the baseline, alternating, in the same run. Loopback
# only; bounded in time; cleans up after itself.
#
#   tests/bench/durable-writes-sqlite.sh [concurrency=16] [seconds=8] [rounds=2]
set -euo pipefail
conc=${1:-16}
secs=${2:-8}
rounds=${3:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/switchyard-target}
cd "$root"
cargo build --release -q -p switchyard -p switchyard-tests --bin switchyard --bin switchyard-loadgen
bin=$CARGO_TARGET_DIR/release
work=$(mktemp -d /tmp/switchyard-bench.XXXXXX)
gw_pid=
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# One measured run: prints writes/s.
measure() {
  rm -rf "$work/gw" && mkdir -p "$work/gw"
  SWITCHYARD__STORE__GROUP_COMMIT=$1 SWITCHYARD__ADMIN__TOKEN=bench-token-0123456789 RUST_LOG=warn \
    "$bin/switchyard" serve --listen 127.0.0.1:0 --data-dir "$work/gw" > "$work/gw.out" 2> "$work/gw.err" &
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
  read -r rate p50 < <(measure false); off+=("$rate"); echo "group commit off: $rate writes/s (p50 $p50 ms)"
  read -r rate p50 < <(measure true); on+=("$rate"); echo "group commit on:  $rate writes/s (p50 $p50 ms)"
done
python3 - "$conc" "${off[*]}" "${on[*]}" <<'PY'
import sys, statistics
conc, off, on = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"concurrency={conc} median writes/s: off {statistics.median(off):.0f}, on {statistics.median(on):.0f}; "
      f"ratio on/off {statistics.median(on) / statistics.median(off):.2f}")
PY
