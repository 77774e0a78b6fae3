package main

import (
	"fmt"
	"io"
	"net"
)

// printBanner writes where a listening node is reached (tuma serve --banner, which make run
// uses): public, the TUMA_PUBLIC_URL, when set, else the address the API listens on; /metrics
// on the internal listener when there is one (TUMA_METRICS_ADDR).
func printBanner(w io.Writer, public, listen, internal string) error {
	if public == "" {
		public = "http://" + reachable(listen)
	}
	metrics := public + "/metrics"
	if internal != "" {
		metrics = "http://" + reachable(internal) + "/metrics"
	}
	_, err := fmt.Fprintf(w, `  Dashboard %[1]s/app/
  API       %[1]s
  Explorer  %[1]s/docs
  OpenAPI   %[1]s/openapi.json
  Metrics   %[2]s
  Health    %[1]s/healthz, %[1]s/readyz

`, public, metrics)
	return err
}

// reachable is a listen address as this machine reaches it: a listener on every interface
// (":8080", "[::]:8080") is reached on loopback.
func reachable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || (host != "" && !ip.IsUnspecified()) {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}
