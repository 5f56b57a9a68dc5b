#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz / libFuzzer) of every decoder that takes network or file
# input: A2A JSON-RPC, HTTP+JSON and gRPC requests, SSE from upstream agents, MCP requests and
# sealed requestState, artifact Range headers, configuration files. Each target runs for
# FUZZ_SECONDS (default 60) from the seed corpus in tests/fuzz/corpus; a crash fails the run and
# leaves its input under tests/fuzz/artifacts/<target>/.
#
#   bash scripts/fuzz.sh [target…]          (default: all targets)
#
# Needs cargo-fuzz (installed from crates.io when missing). libFuzzer's instrumentation needs
# unstable compiler flags: RUSTC_BOOTSTRAP=1 lets the pinned stable toolchain accept them. Rust
# code is memory safe, so no sanitizer is used (`-s none`): the run looks for panics, aborts,
# stack overflows, timeouts and memory blow-ups (-rss_limit_mb).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$HOME/.cache/switchyard-fuzz-target}
export RUSTC_BOOTSTRAP=1
seconds=${FUZZ_SECONDS:-60}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list --fuzz-dir tests/fuzz)
cargo fuzz build -s none --fuzz-dir tests/fuzz
summary=()
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$t/." "$work/"
  log=$(mktemp)
  echo "==> fuzzing $t for ${seconds}s"
  if cargo fuzz run -s none --fuzz-dir tests/fuzz "$t" "$work" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    summary+=("$t: ${runs:-?} executions, 0 crashes")
  else
    tail -n 40 "$log" >&2
    summary+=("$t: CRASH (input in tests/fuzz/artifacts/$t/)")
  fi
  rm -rf "$work" "$log"
done
printf '\nfuzz summary (%ss per target):\n' "$seconds"
printf '  %s\n' "${summary[@]}"
! printf '%s\n' "${summary[@]}" | grep -q CRASH
