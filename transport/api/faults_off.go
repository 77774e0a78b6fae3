//go:build !faults

package api

// Faults are the deliberate defects of the drills' own tests, which only a binary built with
// -tags faults has: here there are none, every hook is the constant false, and the code it
// guards is dead.
type Faults struct{}

func (Faults) releaseKeys() bool { return false }
func (Faults) logSecrets() bool  { return false }
func (Faults) noShed() bool      { return false }
