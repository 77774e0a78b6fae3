//go:build !faults

package persistence

// Faults are deliberate defects for the drills' own tests; this build has none (they need
// go build -tags faults, see faults_on.go), so every hook below is a constant and the code it
// guards is compiled out.
type Faults struct{}

func (Faults) skipRefunds() bool { return false }

func (Faults) skipCounts() bool { return false }

func (Faults) messageFilter(where string) string { return where }
