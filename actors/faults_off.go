//go:build !faults

package actors

// Faults are deliberate defects for the drills' own tests. This build has none: every hook is
// the constant false, so the compiler drops the code it guards (see faults_on.go).
type Faults struct{}

func (Faults) skipResume() bool { return false }

func (Faults) holdSlots() bool { return false }

func (Faults) localTPS() bool { return false }

func (Faults) unwatched() bool { return false }
