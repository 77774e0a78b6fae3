//go:build faults

package api

// Faults are deliberate defects a drill turns on to prove it notices them. Only binaries
// built with -tags faults have them; cmd/tuma/app sets them from TUMA_FAULTS.
type Faults struct {
	ReleaseKeys bool // an Idempotency-Key is given back after any failure, timeouts included
	LogSecrets  bool // the front door logs each request's credentials (the security drill's log scan)
	NoShed      bool // admission is off: every request is queued however many there are (the overload drill)
}

// Each hook keeps a symbol in the faults build, so a test can tell the builds apart.

//go:noinline
func (f Faults) releaseKeys() bool { return f.ReleaseKeys }

//go:noinline
func (f Faults) logSecrets() bool { return f.LogSecrets }

//go:noinline
func (f Faults) noShed() bool { return f.NoShed }
