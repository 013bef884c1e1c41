#!/usr/bin/env bash
# One replica on SQLite, one on PostgreSQL, and three on PostgreSQL behind nginx, measured
# side by side in one run: `dunning-load against` sends the same read
# (`dunning_charges_list` overdue, per_page 10) and write (`dunning_debtors_create`) to
# each, in interleaved rounds, and prints the table with ratios to the SQLite replica.
#
#   benches/replicas.sh [--quick]
#
# Release builds; rate limits off; loopback only; each run bounded (5 s, or 2 s with
# --quick, per server and request, 3 rounds or 1). Needs PostgreSQL and Redis as for
# the tests; nginx is installed by scripts/cluster/run when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PG=${KD_PG:-postgres://postgres@127.0.0.1:5432}
RUN=$ROOT/.cluster/bench-$$
mkdir -p "$RUN"
cargo build -q --release -p kobana-dunning -p dunning-load
BIN=$ROOT/target/release
printf '[rate_limit]\nenabled = false\n' >"$RUN/off.toml"

PIDS=()
SCHEMA=b_$$
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    psql "$PG/dunning_cluster" -X -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" 2>/dev/null || true
}
trap cleanup EXIT

# single NAME PORT [serve flags...]: one replica; sets TOKEN_<NAME>.
single() {
    local name=$1 port=$2
    shift 2
    mkdir -p "$RUN/$name"
    "$BIN/kobana-dunning" serve --listen "127.0.0.1:$port" --data-dir "$RUN/$name" \
        --config "$RUN/off.toml" "$@" 2>"$RUN/$name.err" &
    PIDS+=("$!")
    local i
    for ((i = 0; i < 1800; i++)); do
        grep -q -E '^Ready:|"message":"ready"' "$RUN/$name.err" && break
        sleep 0.1
    done
    local store=()
    [[ $# -gt 0 ]] && store=("$@")
    printf -v "TOKEN_$name" '%s' "$("$BIN/kobana-dunning" token --org demo \
        --person ana@demo.example --data-dir "$RUN/$name" "${store[@]}")"
}

psql "$PG/postgres" -X -q -tc "SELECT 1 FROM pg_database WHERE datname = 'dunning_cluster'" |
    grep -q 1 || psql "$PG/postgres" -X -q -c "CREATE DATABASE dunning_cluster"
psql "$PG/dunning_cluster" -X -q -c "CREATE SCHEMA $SCHEMA"
single sqlite 18191
single postgres 18192 --store "$PG/dunning_cluster?options=-c%20search_path%3D$SCHEMA"

export TARGETS="sqlite=http://127.0.0.1:18191/@$TOKEN_sqlite postgres=http://127.0.0.1:18192/@$TOKEN_postgres"
QUICK=${1:-}
KD_PROFILE=release KD_PORT=18180 KD_LIMITS="enabled=false" \
    bash scripts/cluster/run 3 -- bash -c \
    "exec '$BIN/dunning-load' against \$TARGETS \"cluster-3=\$KD_URL@\$KD_TOKEN\" $QUICK"
