#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer on 127.0.0.1, starting them when they do not:
# local server programs when installed (the Debian cluster, redis-server), otherwise the
# compose file's stores when a Docker engine answers. Safe to run again and again.
set -euo pipefail
cd "$(dirname "$0")/../.."

PGPORT=5432
REDISPORT=6379

say() { printf 'stores: %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pg_up() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -h 127.0.0.1 -p "$PGPORT" -q
	else
		port_open "$PGPORT"
	fi
}

redis_up() {
	if command -v redis-cli >/dev/null 2>&1; then
		[ "$(redis-cli -h 127.0.0.1 -p "$REDISPORT" ping 2>/dev/null)" = "PONG" ]
	else
		port_open "$REDISPORT"
	fi
}

docker_ok() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

wait_for() { # name check
	for _ in $(seq 1 60); do
		if "$2"; then return 0; fi
		sleep 0.5
	done
	say "$1 did not come up within 30s"
	return 1
}

if pg_up; then
	say "PostgreSQL is up on 127.0.0.1:$PGPORT"
else
	if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; then
		version=$(ls /etc/postgresql | sort -V | tail -n 1)
		say "starting PostgreSQL $version (pg_ctlcluster)"
		pg_ctlcluster --skip-systemctl-redirect "$version" main start
	elif docker_ok; then
		say "starting PostgreSQL with docker compose"
		docker compose up -d postgres
	else
		say "PostgreSQL is not running on 127.0.0.1:$PGPORT and neither a local cluster nor Docker is available."
		say "Install PostgreSQL (apt-get install postgresql) or Docker, or point TUMA_DATABASE_URL at a server."
		exit 1
	fi
	wait_for PostgreSQL pg_up
	say "PostgreSQL is up"
fi

if redis_up; then
	say "Redis is up on 127.0.0.1:$REDISPORT"
else
	if command -v redis-server >/dev/null 2>&1; then
		say "starting redis-server"
		redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDISPORT" --save "" --appendonly no >/dev/null
	elif docker_ok; then
		say "starting Redis with docker compose"
		docker compose up -d redis
	else
		say "Redis is not running on 127.0.0.1:$REDISPORT and neither redis-server nor Docker is available."
		say "Tuma still runs without Redis (degraded, in-process limits); install redis-server for the full setup."
		exit 0
	fi
	wait_for Redis redis_up
	say "Redis is up"
fi
