#!/usr/bin/env bash
# Tuma and Kannel 1.4.5 side by side, each against its own copy of the same SMSC: node-smpp
# (carriers/smpp/testdata/nodesmsc, an implementation neither side wrote), on this machine.
# For each: 1-recipient sends from 64 clients for KANNEL_DURATION, then one 10,000-recipient
# message. Rates are counted at the SMSC (submit_sm it answered), CPU from /proc: Kannel's
# bearerbox and smsbox; Tuma's server and every PostgreSQL process (Tuma makes each step
# durable, Kannel keeps its queue in memory).
#
#   KANNEL_DURATION   how long the 1-recipient load runs (default 20s)
#   KANNEL_BULK       recipients of the bulk message (default 10000)
#   KANNEL_BINDS      binds per side (default 1: one bind_transceiver each, window 100)
#   KANNEL_DATABASE_URL  Tuma's database (default postgres://postgres@127.0.0.1:5432/tuma_kannel_cmp)
#   KANNEL_SKIP=1     Tuma's half only (no Kannel needed): for tuning Tuma between comparisons
#   KANNEL_BULK_RUNS  Tuma's bulk messages, one after another, each printed (default 1)
#
# Needs: bin/tuma and bin/tuma-lab (make build), Kannel (apt-get install kannel), Node.js and
# npm, PostgreSQL and Redis running.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=$PWD/bin/tuma
LAB=$PWD/bin/tuma-lab
DUR=${KANNEL_DURATION:-20s}
BULK=${KANNEL_BULK:-10000}
BINDS=${KANNEL_BINDS:-1}
BULK_RUNS=${KANNEL_BULK_RUNS:-1}
DB=${KANNEL_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/tuma_kannel_cmp?sslmode=disable}
PORT=18090
TOKEN="kannel-cmp-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
SKIP=${KANNEL_SKIP:-0}
need="node npm psql curl"
[ "$SKIP" = 1 ] || need="bearerbox smsbox $need"
for cmd in $need; do
	command -v "$cmd" >/dev/null || { echo "kannel.sh: $cmd is missing" >&2; exit 2; }
done
[ -x "$BIN" ] && [ -x "$LAB" ] || { echo "kannel.sh: build bin/tuma and bin/tuma-lab first (make build)" >&2; exit 2; }

W=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

cp carriers/smpp/testdata/nodesmsc/{package.json,package-lock.json,smsc.js} "$W/"
(cd "$W" && npm ci --no-audit --no-fund --prefer-offline >/dev/null 2>&1)

# smsc NAME: starts a node-smpp SMSC, sets SMSC_PORT.
smsc() {
	node "$W/smsc.js" --no-stdin --counts-only --receipt-delay-ms 10 >"$W/smsc-$1.log" 2>&1 </dev/null &
	pids+=($!)
	SMSC_PID=$!
	for _ in $(seq 1 100); do
		SMSC_PORT=$(sed -nE 's/.*"listening","port":([0-9]+).*/\1/p' "$W/smsc-$1.log")
		[ -n "$SMSC_PORT" ] && return 0
		sleep 0.1
	done
	echo "kannel.sh: the SMSC did not start" >&2
	exit 1
}
submits() {
	local n
	n=$(grep '"event":"stats"' "$W/smsc-$1.log" | tail -n 1 | sed -nE 's/.*"submits":([0-9]+).*/\1/p')
	echo "${n:-0}"
}
# cpu PID…: CPU seconds ×100 (clock ticks) of the processes.
cpu() {
	local t=0 p
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] && t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$p/stat")))
	done
	echo "$t"
}
# settle NAME COUNT: waits until the SMSC has COUNT submits, prints the time it took since T0.
settle() {
	while [ "$(submits "$1")" -lt "$2" ]; do sleep 0.01; done
	echo "$(date +%s.%N) - $T0" | bc
}
# drained NAME: waits until the SMSC's submit count stops moving for a second, prints it.
drained() {
	local last=-1 now
	while :; do
		now=$(submits "$1")
		[ "$now" = "$last" ] && { echo "$now"; return; }
		last=$now
		sleep 1
	done
}
row() { printf '| %-6s | %-34s | %10s | %12s |\n' "$@"; }

# --- Kannel ---------------------------------------------------------------------------------
k_small_rate=- k_small_cpu=- k_bulk=- k_bulk_cpu=-
if [ "$SKIP" != 1 ]; then
	smsc kannel
	cat >"$W/kannel.conf" <<-EOF
	group = core
	admin-port = 13000
	admin-password = bench
	smsbox-port = 13001
	box-allow-ip = "127.0.0.1"
	log-file = "$W/bearerbox.log"
	log-level = 3
	dlr-storage = internal

	group = smsc
	smsc = smpp
	smsc-id = node
	host = 127.0.0.1
	port = $SMSC_PORT
	transceiver-mode = true
	smsc-username = tuma
	smsc-password = secret
	system-type = ""
	max-pending-submits = 100
	msg-id-type = 0x03
	instances = $BINDS
	log-level = 3

	group = smsbox
	bearerbox-host = 127.0.0.1
	sendsms-port = 13013
	log-file = "$W/smsbox.log"
	log-level = 3

	group = sendsms-user
	username = tuma
	password = bench
	max-messages = 10
	concatenation = true
	EOF
	bearerbox "$W/kannel.conf" >"$W/bearerbox.out" 2>&1 &
	bb=$!
	pids+=($bb)
	sleep 1
	smsbox "$W/kannel.conf" >"$W/smsbox.out" 2>&1 &
	sb=$!
	pids+=($sb)
	for _ in $(seq 1 100); do grep -q '"event":"bind"' "$W/smsc-kannel.log" && curl -s -o /dev/null "http://127.0.0.1:13013/" && break; sleep 0.1; done

	echo "## Kannel $(bearerbox --version 2>&1 | sed -nE "s/.*version \`([^']+)'.*/\1/p") (bearerbox + smsbox)"
	c0=$(cpu "$bb" "$sb"); s0=$(submits kannel); T0=$(date +%s.%N)
	"$LAB" bench kannel --mode small --duration "$DUR"
	s1=$(drained kannel); took=$(echo "$(date +%s.%N) - $T0 - 1" | bc); c1=$(cpu "$bb" "$sb")
	k_small_rate=$(echo "($s1 - $s0) / $took" | bc)
	k_small_cpu=$(echo "($c1 - $c0) * 10000 / ($s1 - $s0)" | bc)
	c0=$(cpu "$bb" "$sb"); s0=$(submits kannel); T0=$(date +%s.%N)
	"$LAB" bench kannel --mode bulk --recipients "$BULK" --offset 50000000
	k_bulk=$(settle kannel $((s0 + BULK))); c1=$(cpu "$bb" "$sb")
	k_bulk_cpu=$(echo "($c1 - $c0) * 10000 / $BULK" | bc)
	kill -TERM "$sb" "$bb" 2>/dev/null || true
fi

# --- Tuma -----------------------------------------------------------------------------------
smsc tuma
tsmsc=$SMSC_PID
admin=$(printf '%s' "$DB" | sed -E 's#/[^/?]+(\?|$)#/postgres\1#')
name=$(printf '%s' "$DB" | sed -E 's#^.*/([^/?]+)(\?.*)?$#\1#')
psql "$admin" -qAt -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" >/dev/null
bind="smpp://tuma:secret@127.0.0.1:$SMSC_PORT?window=100&binds=$BINDS"
env TUMA_HTTP_ADDR="127.0.0.1:$PORT" TUMA_DATABASE_URL="$DB" TUMA_REDIS_PREFIX="tuma-kannel:" \
	TUMA_ADMIN_TOKEN="$TOKEN" TUMA_ACCESS_LOG=false TUMA_LOG_LEVEL=warn TUMA_BCRYPT_COST=6 \
	TUMA_RATE_LIMIT_RPS=0 TUMA_SIGNUP_LIMIT_PER_IP=0 TUMA_AUTH_LIMIT_PER_IP=0 \
	TUMA_CARRIERS=smpp TUMA_SMPP_SAFARICOM="$bind" TUMA_SMPP_AIRTEL="$bind" TUMA_SMPP_TELKOM="$bind" \
	"$BIN" serve >"$W/tuma.log" 2>&1 &
tp=$!
pids+=($tp)
for _ in $(seq 1 120); do curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.5; done
pg() { pgrep -x postgres | tr '\n' ' '; }

echo "## Tuma $(git rev-parse --short HEAD 2>/dev/null || echo dev) (server + PostgreSQL)"
c0=$(cpu "$tp" $(pg)); s0=$(submits tuma); T0=$(date +%s.%N)
"$LAB" bench --url "http://127.0.0.1:$PORT" --admin-token "$TOKEN" --scenario small --duration "$DUR" | tail -4
s1=$(drained tuma); took=$(echo "$(date +%s.%N) - $T0 - 1" | bc); c1=$(cpu "$tp" $(pg))
t_small_rate=$(echo "($s1 - $s0) / $took" | bc)
t_small_cpu=$(echo "($c1 - $c0) * 10000 / ($s1 - $s0)" | bc)

reg=$(curl -fsS "http://127.0.0.1:$PORT/auth/register" -H 'content-type: application/json' \
	-d '{"email":"bulk@example.com","password":"Bulk-bench-9","full_name":"Bulk Bench","company_name":"Bulk Ltd","phone":"0712345678"}')
key=$(printf '%s' "$reg" | sed -nE 's/.*"api_key":"([^"]+)".*/\1/p')
acct=$(printf '%s' "$reg" | sed -nE 's/^\{"id":"([^"]+)".*/\1/p')
curl -fsS -X POST "http://127.0.0.1:$PORT/admin/accounts/$acct/credit" -H "Authorization: Bearer $TOKEN" \
	-H 'content-type: application/json' -d '{"amount_kes": 100000}' >/dev/null
# Each bulk goes to numbers of its own; after the first, a half-second pause (a warm node).
for r in $(seq 1 "$BULK_RUNS"); do
	[ "$r" = 1 ] || sleep 0.5
	first=$((20000000 + (r - 1) * BULK))
	seq -f '07%08.0f' "$first" $((first + BULK - 1)) | awk 'BEGIN{printf "{\"message\":\"Habari! Your order 4411 has shipped and arrives tomorrow.\",\"recipients\":["} {printf "%s\"%s\"", (NR>1?",":""), $0} END{print "]}"}' >"$W/bulk.json"
	c0=$(cpu "$tp" $(pg)); n0=$(cpu "$tsmsc"); s0=$(submits tuma); T0=$(date +%s.%N)
	curl -fsS -o /dev/null -w 'tuma bulk '"$r"': 1 request for '"$BULK"' recipients answered %{http_code} in %{time_total} s' \
		-X POST "http://127.0.0.1:$PORT/sms/send" -H "X-API-Key: $key" -H 'content-type: application/json' --data-binary @"$W/bulk.json"
	t_bulk=$(settle tuma $((s0 + BULK))); c1=$(cpu "$tp" $(pg)); n1=$(cpu "$tsmsc")
	t_bulk_cpu=$(echo "($c1 - $c0) * 10000 / $BULK" | bc)
	t_bulk_smsc=$(echo "($n1 - $n0) * 10000 / $BULK" | bc)
	echo "; last submit_sm after $t_bulk s; CPU µs/msg: Tuma and PostgreSQL $t_bulk_cpu, the SMSC $t_bulk_smsc"
done

echo
row System "Measurement" "Value" "CPU µs/msg"
row "---" "---" "---" "---"
row Kannel "1-recipient sends, msgs/s at SMSC" "$k_small_rate" "$k_small_cpu"
row Tuma "1-recipient sends, msgs/s at SMSC" "$t_small_rate" "$t_small_cpu"
row Kannel "${BULK}-recipient bulk to last submit" "${k_bulk} s" "$k_bulk_cpu"
row Tuma "${BULK}-recipient bulk to last submit" "${t_bulk} s" "$t_bulk_cpu"
echo
echo "(Tuma's bulk row is its last of $BULK_RUNS; the SMSC's own CPU in it: $t_bulk_smsc µs/msg, on the same two cores.)"
