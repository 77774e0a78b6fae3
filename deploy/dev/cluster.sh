#!/usr/bin/env bash
# `make cluster`: three Tuma nodes as one cluster on this machine, behind HAProxy, sending over
# SMPP to one simulated SMSC (bin/tuma smsc), on the PostgreSQL and Redis of deploy/dev/stores.sh.
# Runs in the foreground; Ctrl-C stops everything it started. Logs and the HAProxy
# configuration go to .cluster/.
#
#   API (HAProxy)       127.0.0.1:8080     nodes 127.0.0.1:8081, :8082, :8083
#   tenants' SMPP       127.0.0.1:2775     nodes 127.0.0.1:2776, :2777, :2778
#   cluster ports       127.0.0.1:7101, :7111, :7121 (health checks on the next port)
#   SMSC simulator      127.0.0.1:2790 (GET http://127.0.0.1:2791/stats: what it accepted, per second)
#   HAProxy stats       http://127.0.0.1:8404/
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BIN:-bin/tuma}
DIR=.cluster
NODES=${NODES:-3} # 1-9
mkdir -p "$DIR"

say() { printf 'cluster: %s\n' "$*" >&2; }

if ! command -v haproxy >/dev/null 2>&1; then
	say "installing HAProxy (apt-get install haproxy)"
	if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy >/dev/null
fi

export TUMA_DATABASE_URL=${TUMA_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/tuma_cluster?sslmode=disable}
export TUMA_REDIS_PREFIX=${TUMA_REDIS_PREFIX:-tuma-cluster:}
export TUMA_ADMIN_TOKEN=${TUMA_ADMIN_TOKEN:-dev-admin-token-change-me}
export TUMA_JWT_SECRET=${TUMA_JWT_SECRET:-dev-cluster-jwt-secret-change-me-0123456789}
export TUMA_PUBLIC_URL=${TUMA_PUBLIC_URL:-http://127.0.0.1:8080}
export TUMA_CARRIERS=smpp
smsc='smpp://tuma:secret@127.0.0.1:2790'
export TUMA_SMPP_SAFARICOM=$smsc TUMA_SMPP_AIRTEL=$smsc TUMA_SMPP_TELKOM=$smsc
peers=
for i in $(seq 1 $NODES); do peers="$peers${peers:+,}127.0.0.1:$((7091 + 10 * i))"; done
export TUMA_CLUSTER_PEERS=$peers

pids=()
stop() {
	trap - INT TERM EXIT
	say "stopping"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop INT TERM EXIT

"$BIN" smsc --addr 127.0.0.1:2790 --control 127.0.0.1:2791 --receipt-delay 500ms >"$DIR/smsc.log" 2>&1 &
pids+=($!)
TUMA_CLUSTER_PEERS= TUMA_CARRIERS=sim "$BIN" migrate

# node runs one node, starting it again when it exits 75 (it was paused past
# TUMA_CLUSTER_PAUSE_LIMIT and must rejoin as a new member), as systemd's Restart= would.
node() {
	local child= code
	trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; wait "$child"; exit 0' INT TERM
	while :; do
		"$BIN" serve &
		child=$!
		printf '%s\n' "$child" >"$DIR/$TUMA_NODE_ID.pid"
		code=0
		wait "$child" || code=$?
		[ "$code" = 75 ] || exit "$code"
		printf 'cluster: %s exited 75 (paused past its limit): starting it again\n' "$TUMA_NODE_ID" >&2
	done
}

servers=
smpp=
for i in $(seq 1 $NODES); do
	(
		export TUMA_HTTP_ADDR=127.0.0.1:$((8080 + i)) TUMA_CLUSTER_ADDR=127.0.0.1:$((7091 + 10 * i)) TUMA_NODE_ID=node-$i \
			TUMA_SMPP_SERVER_ADDR=127.0.0.1:$((2775 + i)) TUMA_DATA_DIR="$DIR/node-$i-data"
		node
	) >"$DIR/node-$i.log" 2>&1 &
	pids+=($!)
	servers="$servers    server node-$i 127.0.0.1:$((8080 + i)) check
"
	smpp="$smpp    server node-$i 127.0.0.1:$((2775 + i)) check
"
done

cat >"$DIR/haproxy.cfg" <<EOF
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 2
    option redispatch
frontend api
    bind 127.0.0.1:8080
    default_backend nodes
backend nodes
    balance roundrobin
    # A node joining the cluster, draining or without PostgreSQL answers /readyz 503.
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 1s fall 2 rise 2
$servers
frontend smpp
    mode tcp
    bind 127.0.0.1:2775
    default_backend smpp_nodes
backend smpp_nodes
    mode tcp
    balance leastconn
    default-server inter 1s fall 2 rise 2
$smpp
listen stats
    bind 127.0.0.1:8404
    stats enable
    stats uri /
EOF
haproxy -f "$DIR/haproxy.cfg" -db >"$DIR/haproxy.log" 2>&1 &
pids+=($!)

for i in $(seq 1 $NODES); do
	for _ in $(seq 1 150); do
		curl -sf "http://127.0.0.1:$((8080 + i))/readyz" >/dev/null 2>&1 && break
		sleep 0.2
	done
	curl -sf "http://127.0.0.1:$((8080 + i))/readyz" >/dev/null 2>&1 || { say "node-$i did not become ready: $DIR/node-$i.log"; exit 1; }
done
cat <<EOF

  Tuma cluster: $NODES nodes, one database ($TUMA_DATABASE_URL)
  API       http://127.0.0.1:8080 (HAProxy; nodes on :8081-:808$NODES, each with /readyz and /metrics)
  SMPP      127.0.0.1:2775 (HAProxy; tenants bind with /smpp/credentials)
  SMSC      127.0.0.1:2790 (bin/tuma smsc, the networks of every node; counts: curl 127.0.0.1:2791/stats)
  Admin     Authorization: Bearer $TUMA_ADMIN_TOKEN
  HAProxy   http://127.0.0.1:8404/ (stats)
  Logs      $DIR/node-N.log, $DIR/smsc.log, $DIR/haproxy.log

  Processes $DIR/node-N.pid (kill -9 one: its accounts move to the others within seconds;
            kill -STOP it for 5 s, then -CONT: it exits 75 and is started again)
  Ctrl-C stops everything.

EOF
# A node that dies (kill -9 it to watch the others take its accounts over) leaves the rest
# running; start it again by hand with the same variables (its line in ps).
wait
