//go:build faults

package actors

// Faults are deliberate defects a drill turns on to prove it notices them. Only binaries
// built with -tags faults have them (and let the configuration set them); in any other build
// Faults is empty and every hook below is the constant false (faults_off.go).
type Faults struct {
	SkipResume bool // unfinished work of earlier runs is never resumed
	// HoldSlots: a job keeps its dispatch slot until its last outcome, so a network that is
	// down stops the tenant's other networks once its slots are full (the deps drill).
	HoldSlots bool
}

// skipResume: a tenant never walks the jobs earlier runs (or incarnations) left unfinished.
//
//go:noinline
func (f Faults) skipResume() bool { return f.SkipResume }

// holdSlots: a job accepted with its messages in hand never gives its dispatch slot back.
//
//go:noinline
func (f Faults) holdSlots() bool { return f.HoldSlots }
