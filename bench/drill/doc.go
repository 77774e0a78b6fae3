// Package drill is `tuma-lab drill` and `tuma-lab security`. The reliability drills run the
// real tuma server binary against real PostgreSQL and Redis, inject faults (kill -9, SIGTERM,
// stores stopped, networks down or slow, request storms) and check what must hold afterwards:
// every accepted message final exactly once, job counters equal to recounts, every ledger
// balanced to the cent, no Idempotency-Key charged twice. The security checks probe a node
// the run started on loopback with hostile input, other tenants' credentials and brute force,
// search every log of the run for every secret it used, and run govulncheck on the source.
//
// A drill drives the node only over HTTP (the public API, the admin API, /metrics, /healthz,
// /readyz) and reads its database with pgx for the checks. It never imports the engine, the
// front door or the store: what it measures is what an operator would see.
//
// Each drill prints rows of a table (drill, check, figure, target, PASS/FAIL with the reason).
// The drills' own tests (drill_test.go) run them in --short form against a binary built with
// -tags faults and prove each check can fail.
package drill
