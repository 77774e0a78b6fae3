# Sourced by bench/suite.sh and bench/ab.sh: one node of the server at a time, on simulated
# networks, on 127.0.0.1:$PORT with the admin token $TOKEN, sign-up and rate limits off.
#
#   node_start DATABASE_URL REDIS_PREFIX LOG BIN [VAR=value …]   returns once /readyz answers
#   node_stop                                                    SIGTERM, and waits for it

node_pid=

node_stop() {
	if [ -n "$node_pid" ]; then
		kill -TERM "$node_pid" 2>/dev/null || true
		wait "$node_pid" 2>/dev/null || true
		node_pid=
	fi
}

node_start() {
	local db=$1 prefix=$2 log=$3 bin=$4
	shift 4
	env TUMA_HTTP_ADDR="127.0.0.1:$PORT" TUMA_DATABASE_URL="$db" TUMA_REDIS_PREFIX="$prefix" \
		TUMA_ADMIN_TOKEN="$TOKEN" TUMA_ACCESS_LOG=false TUMA_LOG_LEVEL=warn TUMA_BCRYPT_COST=6 \
		TUMA_RATE_LIMIT_RPS=0 TUMA_SIGNUP_LIMIT_PER_IP=0 TUMA_AUTH_LIMIT_PER_IP=0 "$@" "$bin" serve >"$log" 2>&1 &
	node_pid=$!
	for _ in $(seq 1 120); do
		if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$node_pid" 2>/dev/null; then
			echo "bench: the node did not start; see $log" >&2
			tail -5 "$log" >&2
			exit 1
		fi
		sleep 0.5
	done
	echo "bench: the node did not become ready within a minute; see $log" >&2
	exit 1
}
