#!/usr/bin/env bash
# Two builds of the server measured side by side: runs alternate A B B A A B … (so an hour's
# drift falls on both), each against a node of its own on a fresh database, on networks
# answering in 1 ms; then `tuma-lab bench compare` of the two sides. On a VM whose speed
# swings ±20 % between runs of one build, this is the way to tell a change from the weather.
#
#   bench/ab.sh A_BIN B_BIN [RUNS] [-- tuma-lab bench flags]
#     RUNS   runs of each build (default 3)
#     flags  default: --scenario small --duration 20s --db-cpu
#
#   AB_DATABASE_URL  the databases' server (default postgres://postgres@127.0.0.1:5432;
#                    one database per run, tuma_ab_<side><n>, dropped before it is used)
#   AB_PORT          the nodes' port (default 18090)
#   AB_OUT           where results and logs go (default bench/results/ab)
#   AB_THRESHOLD     compare's noise threshold in percent (default its own, 25)
#   AB_ENV_A, AB_ENV_B  settings of each side's node, as VAR=value words: one build with two
#                    settings is `bench/ab.sh bin/tuma bin/tuma` with AB_ENV_B=TUMA_X=2
#   AB_FLAGS_A, AB_FLAGS_B  more tuma-lab bench flags for one side only: the rate with webhooks
#                    against the rate without is AB_FLAGS_B='--webhooks 127.0.0.1:9901'
#
# Build an older commit beside this tree with, for example:
#   git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/tuma-old ./cmd/tuma)
set -euo pipefail
cd "$(dirname "$0")/.."

A=${1:?usage: bench/ab.sh A_BIN B_BIN [RUNS] [-- tuma-lab bench flags]}
B=${2:?usage: bench/ab.sh A_BIN B_BIN [RUNS] [-- tuma-lab bench flags]}
shift 2
RUNS=3
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	RUNS=$1
	shift
fi
[ $# -gt 0 ] && [ "$1" = -- ] && shift
FLAGS=("$@")
[ ${#FLAGS[@]} -gt 0 ] || FLAGS=(--scenario small --duration 20s --db-cpu)
case "$RUNS" in '' | *[!0-9]* | 0) echo "ab: RUNS must be a whole number ≥ 1" >&2; exit 2 ;; esac
for bin in "$A" "$B"; do
	[ -x "$bin" ] || { echo "ab: $bin is not an executable" >&2; exit 2; }
done
command -v psql >/dev/null || { echo "ab: needs psql, for a fresh database per run" >&2; exit 2; }

LAB=bin/tuma-lab
[ -x "$LAB" ] || { echo "ab: build the load tool first (make build)" >&2; exit 2; }
SERVER=${AB_DATABASE_URL:-postgres://postgres@127.0.0.1:5432}
SERVER=${SERVER%/}
PORT=${AB_PORT:-18090}
OUT=${AB_OUT:-bench/results/ab}
URL="http://127.0.0.1:$PORT"
ENV_A=${AB_ENV_A:-}
ENV_B=${AB_ENV_B:-}
TOKEN="bench-ab-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
mkdir -p "$OUT"
rm -f "$OUT"/a-*.json "$OUT"/b-*.json

. bench/node.sh
trap node_stop EXIT

# one SIDE N BIN [VAR=value…]: a fresh database and node, one run, the node stopped.
one() {
	local side=$1 n=$2 bin=$3 db="tuma_ab_$1$2"
	shift 3
	psql "$SERVER/postgres?sslmode=disable" -qAt -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
	node_start "$SERVER/$db?sslmode=disable" "tuma-ab-$side$n:" "$OUT/server-$side$n.log" "$bin" TUMA_SIM_LATENCY=1ms "$@"
	echo "== $side$n: $bin $*"
	local extra=${AB_FLAGS_A:-}
	[ "$side" = b ] && extra=${AB_FLAGS_B:-}
	# shellcheck disable=SC2086 # the side's flags are words
	"$LAB" bench --url "$URL" --admin-token "$TOKEN" --json "$OUT/$side-$n.json" "${FLAGS[@]}" $extra |
		grep -E '^(load|end to end|  end-to-end rate|server CPU|database CPU|accept latency)' || true
	node_stop
}

for n in $(seq 1 "$RUNS"); do
	if [ $((n % 2)) -eq 1 ]; then
		one a "$n" "$A" $ENV_A
		one b "$n" "$B" $ENV_B
	else
		one b "$n" "$B" $ENV_B
		one a "$n" "$A" $ENV_A
	fi
done
"$LAB" bench compare ${AB_THRESHOLD:+--threshold "$AB_THRESHOLD"} "$OUT"/a-*.json -- "$OUT"/b-*.json
