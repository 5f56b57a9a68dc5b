# Shared by the conformance scripts (sourced, not run).

# wait_line <file> <prefix>: prints the rest of the first line of <file> starting with <prefix>,
# waiting up to 30 s for it; else prints the file to stderr and fails.
wait_line() {
  for _ in $(seq 300); do
    line=$(grep -m1 "^$2" "$1" 2>/dev/null || true)
    [ -n "$line" ] && { echo "${line#"$2"}"; return 0; }
    sleep 0.1
  done
  echo "run.sh: no '$2' line in $1:" >&2; cat "$1" >&2; return 1
}
