#!/usr/bin/env bash
# The nemesis's long profile: `tests/nemesis/run.sh --minutes N [--seed S] [--out DIR]`.
# Builds what it needs, runs three replicas under random faults for N minutes, writes the
# report (nemesis.json and the table nemesis.md) to DIR (default target/nemesis) and prints it.
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=20 seed="" out="target/nemesis"
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        *) echo "usage: $0 --minutes N [--seed S] [--out DIR]" >&2; exit 2 ;;
    esac
done
command -v psql >/dev/null || { echo "psql is missing: apt-get install postgresql-client postgresql" >&2; exit 1; }
cargo build -q -p switchyard -p switchyard-mcp-fixture
export SWITCHYARD_NEMESIS_SECONDS=$((minutes * 60)) SWITCHYARD_NEMESIS_OUT="$(realpath -m "$out")"
[ -n "$seed" ] && export SWITCHYARD_NEMESIS_SEED="$seed"
# The replicas' data and logs are kept (their path is printed), to study an anomaly.
export SWITCHYARD_NEMESIS_KEEP=1
cargo test -q -p switchyard-nemesis --test nemesis -- --nocapture
