#!/usr/bin/env bash
# Installs what the test suite drives beyond Go, PostgreSQL and Redis, when it is missing:
#   - Chromium, for the browser test of the checkout page (Debian's chromium package);
#   - Node.js and npm, for the SMPP interoperability tests (node-smpp as an SMSC and as an
#     ESME; the tests install the package themselves into a temporary folder);
#   - Kannel, whose bearerbox and smsbox bind to the tenants' SMPP server in its interop test;
#   - HAProxy, in front of the cluster drills' nodes (Debian's haproxy package);
#   - promtool, for the alert-rule tests (taken out of Debian's prometheus package without
#     installing it, so no Prometheus service is set up on the machine).
# Prints the directory to put on PATH for promtool. Safe to run again and again.
set -euo pipefail

say() { printf 'test-tools: %s\n' "$*" >&2; }
tools="${XDG_CACHE_HOME:-$HOME/.cache}/tuma/tools"
mkdir -p "$tools/bin"

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
		say "need root to run: $*"; return 1
	fi
}

if command -v chromium >/dev/null 2>&1 || [ -n "${TUMA_TEST_CHROMIUM:-}" ]; then
	say "Chromium is installed"
else
	say "installing Chromium (apt-get install chromium)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null ||
		{ as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }
fi

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	say "Node.js and npm are installed"
else
	say "installing Node.js and npm (apt-get install nodejs npm)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm >/dev/null ||
		{ as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm >/dev/null; }
fi

if command -v bearerbox >/dev/null 2>&1 && command -v smsbox >/dev/null 2>&1; then
	say "Kannel is installed"
else
	say "installing Kannel (apt-get install kannel)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends kannel >/dev/null ||
		{ as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends kannel >/dev/null; }
fi

if command -v haproxy >/dev/null 2>&1; then
	say "HAProxy is installed"
else
	say "installing HAProxy (apt-get install haproxy)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy >/dev/null ||
		{ as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy >/dev/null; }
fi

if command -v promtool >/dev/null 2>&1 || [ -x "$tools/bin/promtool" ]; then
	say "promtool is available"
else
	say "fetching promtool (Debian's prometheus package, unpacked into $tools)"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	(cd "$work" && apt-get download prometheus >/dev/null 2>&1) ||
		{ as_root apt-get update -qq && (cd "$work" && apt-get download prometheus >/dev/null 2>&1); }
	dpkg-deb -x "$work"/prometheus_*.deb "$work/x"
	install -m 0755 "$work/x/usr/bin/promtool" "$tools/bin/promtool"
fi
echo "$tools/bin"
