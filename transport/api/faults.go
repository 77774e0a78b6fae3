package api

// Faults are deliberate defects a drill turns on to prove it notices them. Only binaries
// built with -tags faults let the configuration set them.
type Faults struct {
	ReleaseKeys bool // an Idempotency-Key is given back after any failure, timeouts included
	LogSecrets  bool // the front door logs each request's credentials (the security drill's log scan)
	NoShed      bool // admission is off: every request is queued however many there are (the overload drill)
}

func (f Faults) releaseKeys() bool { return f.ReleaseKeys }
func (f Faults) logSecrets() bool  { return f.LogSecrets }
func (f Faults) noShed() bool      { return f.NoShed }
