// Package bench is `tuma-lab bench`: a load generator that drives a running Tuma over HTTP the
// way tenants do (register, fund, send, poll their statistics) and measures the whole path,
// from the request to every message's final state, next to the server's own Prometheus
// counters. `tuma-lab bench compare` sets the JSON results of runs side by side.
//
// The package's _test.go files also hold the engine benchmarks run by `make bench`.
package bench
