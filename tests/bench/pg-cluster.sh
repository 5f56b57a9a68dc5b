# Sourced by the PostgreSQL benchmarks (needs pgbin and port set; start_gateway also conc and bin): a throw-away
# cluster with PostgreSQL's default durability (fsync=on, synchronous_commit=on) in $work,
# listening on 127.0.0.1:$port, stopped and removed on exit with any gateway started here.
# BENCH_PG_OPTS adds server options for diagnosis, e.g. "-c synchronous_commit=off".
work=$(mktemp -d /tmp/switchyard-bench.XXXXXX)
chown postgres: "$work" 2>/dev/null || true
# (from the work dir: the postgres user may not be allowed into the checkout)
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
  -o "-k $work -c listen_addresses=127.0.0.1 -p $port -c max_connections=300 ${BENCH_PG_OPTS:-}" >/dev/null \
  || { cat "$work/pg.log" >&2; exit 1; }
admin_url="postgres://postgres@127.0.0.1:$port/postgres"
# Creates the database $1 and prints its URL.
pg_url() { psql -q -d "$admin_url" -c "CREATE DATABASE $1" >/dev/null; echo "postgres://postgres@127.0.0.1:$port/$1"; }
token=bench-token-0123456789

# Starts a gateway on the store URL $1 with the change feed $2 (true|false); sets base, gw_pid.
start_gateway() {
  rm -rf "$work/gw" && mkdir -p "$work/gw"
  SWITCHYARD__STORE__CHANGE_FEED=$2 SWITCHYARD__ADMIN__TOKEN=$token SWITCHYARD__STORE__MAX_CONNECTIONS=$((conc * 2)) \
    RUST_LOG=warn "$bin/switchyard" serve --listen 127.0.0.1:0 --data-dir "$work/gw" --store "$1" \
    > "$work/gw.out" 2> "$work/gw.err" &
  gw_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/gw.out" 2>/dev/null && break; sleep 0.1; done
  base=$(sed -n 's/^switchyard ready: listening on //p' "$work/gw.out")
  [ -n "$base" ] || { cat "$work/gw.err"; echo "gateway did not start" >&2; exit 1; }
}

stop_gateway() {
  kill "$gw_pid" && wait "$gw_pid" 2>/dev/null || true
  gw_pid=
}
