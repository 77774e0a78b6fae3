#!/usr/bin/env bash
# Where a running node's CPU goes under `tuma-lab bench --scenario small` (1-recipient sends):
# the CPU of the server, of PostgreSQL's backends and of the load tool, per accepted send;
# a pprof CPU profile of the server; and, when the pg_stat_statements extension is loaded,
# each statement's time and rows per send. The node must be on this machine, serve
# /debug/pprof to the admin token (TUMA_PPROF=true) and /metrics on its API port.
#
#   bench/profile.sh URL ADMIN_TOKEN DATABASE_URL [DURATION]   (DURATION default 30s)
#
# Writes profile/cpu.pprof and profile/*.txt; see bench/README.md for what the last run said.
set -euo pipefail
cd "$(dirname "$0")/.."

URL=${1:?usage: bench/profile.sh URL ADMIN_TOKEN DATABASE_URL [DURATION]}
TOKEN=${2:?admin token}
DB=${3:?database URL}
DURATION=${4:-30s}
OUT=profile
secs=${DURATION%s}
window=$((secs / 2))
mkdir -p "$OUT"

port=${URL##*:}
port=${port%%/*}
server=$(ss -Hltnp "sport = :$port" | sed -nE 's/.*pid=([0-9]+).*/\1/p' | head -1)
[ -n "$server" ] || { echo "profile: nothing listens on port $port here" >&2; exit 1; }

stats=false
if psql "$DB" -qAt -c "SELECT pg_stat_statements_reset()" >/dev/null 2>&1 ||
	{ psql "$DB" -qAt -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null 2>&1 &&
		psql "$DB" -qAt -c "SELECT pg_stat_statements_reset()" >/dev/null 2>&1; }; then
	stats=true
else
	echo "profile: pg_stat_statements is not loaded (shared_preload_libraries); statements skipped" >&2
fi

# ticks NAME…: CPU ticks (user+system) of the server, all postgres processes, and the rest.
ticks() {
	local pid comm t srv=0 pg=0 tool=0
	for pid in /proc/[0-9]*; do
		pid=${pid#/proc/}
		comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
		t=$(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null) || continue
		if [ "$pid" = "$server" ]; then srv=$((srv + t))
		elif [ "$comm" = postgres ]; then pg=$((pg + t))
		elif [ "$pid" = "${bench:-}" ]; then tool=$((tool + t)); fi
	done
	echo "$srv $pg $tool"
}
accepted() {
	curl -fsS "$URL/metrics" | awk '/^tuma_messages_accepted_total/ {s += $2} END {printf "%d\n", s}'
}

bin/tuma-lab bench --url "$URL" --admin-token "$TOKEN" --scenario small --duration "$DURATION" >"$OUT/bench.txt" 2>&1 &
bench=$!
sleep $((secs / 4 + 3)) # past sign-up and warm-up
read -r s0 p0 t0 < <(ticks)
a0=$(accepted)
curl -fsS -H "Authorization: Bearer $TOKEN" "$URL/debug/pprof/profile?seconds=$window" -o "$OUT/cpu.pprof"
read -r s1 p1 t1 < <(ticks)
a1=$(accepted)
wait "$bench" || { cat "$OUT/bench.txt" >&2; exit 1; }

hz=$(getconf CLK_TCK)
sends=$((a1 - a0))
awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v t=$((t1 - t0)) -v n="$sends" -v hz="$hz" -v w="$window" 'BEGIN {
	printf "window %d s, %d sends accepted (%.0f/s)\n", w, n, n / w
	printf "%-24s %8.1f cpu-s %7.0f µs/send\n", "tuma server", s / hz, s / hz * 1e6 / n
	printf "%-24s %8.1f cpu-s %7.0f µs/send\n", "postgresql (all)", p / hz, p / hz * 1e6 / n
	printf "%-24s %8.1f cpu-s %7.0f µs/send\n", "load tool", t / hz, t / hz * 1e6 / n
}' | tee "$OUT/split.txt"
go tool pprof -top -cum -nodecount=60 bin/tuma "$OUT/cpu.pprof" 2>/dev/null | grep -E 'tuma-sms|fasthttp.\(\*Server\).serveConn$|gcBgMarkWorker$|Syscall6$' >"$OUT/pprof.txt" || true
echo "pprof (cumulative, the node's own packages): $OUT/pprof.txt"
if $stats; then
	total=$(grep -E '^messages accepted' "$OUT/bench.txt" | awk '{gsub(",", "", $3); print $3}')
	psql "$DB" -qAt -F ' | ' -c "SELECT round(total_exec_time::numeric * 1000 / $total, 1) AS us_per_send,
		round(rows::numeric / $total, 2) AS rows_per_send, calls,
		left(regexp_replace(query, '\s+', ' ', 'g'), 70)
		FROM pg_stat_statements WHERE total_exec_time * 1000 / $total >= 0.5 ORDER BY total_exec_time DESC" |
		tee "$OUT/statements.txt"
fi
