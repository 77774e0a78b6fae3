#!/usr/bin/env bash
# The second half of `make bench`: a short `tuma-lab bench` of every scenario against a Tuma this
# script starts (built from this tree, on simulated networks, on a database of its own), then
# one line per scenario. The throttled scenario gets a node of its own, its links capped.
#
#   BENCH_DURATION   how long each scenario sends (default 10s; soak runs twice as long)
#   BENCH_OUT        where results go (default bench/results: one JSON file per scenario)
#   BENCH_PORT       port of the node under test (default 18080)
#   BENCH_DATABASE_URL  its database (default postgres://postgres@127.0.0.1:5432/tuma_bench)
#   HEADLINE_RUNS    runs of each headline measurement (default 3; 0 skips them)
#
# Compare two runs with: bin/tuma-lab bench compare OLD/bulk.json NEW/bulk.json
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=bin/tuma
LAB=bin/tuma-lab
OUT=${BENCH_OUT:-bench/results}
DURATION=${BENCH_DURATION:-10s}
PORT=${BENCH_PORT:-18080}
DB=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/tuma_bench?sslmode=disable}
CAPS=safaricom=100,airtel=50,telkom=20
TOKEN="bench-suite-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
case "$DURATION" in
*[!0-9]*s | s | *[!s]) echo "bench: BENCH_DURATION must be whole seconds, like 10s" >&2; exit 2 ;;
esac
URL="http://127.0.0.1:$PORT"
mkdir -p "$OUT"
rm -f "$OUT"/*.json

# A fresh database each time, so tables do not grow from run to run (needs psql; without it
# the database is reused, which only makes later runs a little slower).
if command -v psql >/dev/null 2>&1; then
	admin=$(printf '%s' "$DB" | sed -E 's#/[^/?]+(\?|$)#/postgres\1#')
	name=$(printf '%s' "$DB" | sed -E 's#^.*/([^/?]+)(\?.*)?$#\1#')
	psql "$admin" -qAt -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" >/dev/null
fi

. bench/node.sh
trap node_stop EXIT

# start NAME [VAR=value …]: a node on the simulated networks, waiting until it is ready.
start() {
	local name=$1
	shift
	node_start "$DB" "tuma-bench:" "$OUT/server-$name.log" "$BIN" "$@"
}

# run SCENARIO [flags…]: a run whose checks fail is reported at the end, the others still run.
failed=()
run() {
	local scenario=$1
	shift
	if ! "$LAB" bench --url "$URL" --admin-token "$TOKEN" --scenario "$scenario" --json "$OUT/$scenario.json" "$@"; then
		failed+=("$scenario")
	fi
}

# The engine's four speed figures (issue 16), over HTTP from this separate process, on networks
# that answer in 1 ms as the targets assume: HEADLINE_RUNS runs each of 1-recipient sends (with
# the CPU of the node's PostgreSQL, which must run on this machine) and of 10,000-recipient
# sends adding up to 1,000,000 messages, then their medians next to the targets.
HEADLINE_RUNS=${HEADLINE_RUNS:-3}
if [ "$HEADLINE_RUNS" -gt 0 ]; then
	echo "== Headline figures: $HEADLINE_RUNS runs each, networks answering in 1 ms"
	mkdir -p "$OUT/headline"
	rm -f "$OUT"/headline/*.json
	start headline TUMA_SIM_LATENCY=1ms
	for i in $(seq 1 "$HEADLINE_RUNS"); do
		run small --duration 20s --db-cpu --json "$OUT/headline/small-$i.json"
		run bulk --duration 10s --rate 10 --json "$OUT/headline/bulk-$i.json"
	done
	node_stop
	"$LAB" bench headline "$OUT"/headline/*.json
	echo
fi

echo "== tuma-lab bench: every scenario against a node on simulated networks ($DURATION each)"
start open
run bulk --duration "$DURATION"
run small --duration "$DURATION"
run mixed --duration "$DURATION"
run soak --duration "$(( ${DURATION%s} * 2 ))s"
node_stop

start throttled TUMA_LINK_TPS="$CAPS"
run throttled --caps "$CAPS"
node_stop

echo
echo "== Summary (results in $OUT; compare runs with bin/tuma-lab bench compare)"
"$LAB" bench summary "$OUT"/*.json
if [ ${#failed[@]} -gt 0 ]; then
	echo "bench: checks failed in: ${failed[*]} (see above)" >&2
	exit 1
fi
