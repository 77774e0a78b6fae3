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
	LocalTPS  bool // links keep to a network's cap each on its own node, not together (cluster-tps)
	Unwatched bool // no watchdog: a node paused past eviction goes on with its old view (cluster-pause)
}

// skipResume: a tenant never walks the jobs earlier runs (or incarnations) left unfinished.
//
//go:noinline
func (f Faults) skipResume() bool { return f.SkipResume }

// holdSlots: a job accepted with its messages in hand never gives its dispatch slot back.
//
//go:noinline
func (f Faults) holdSlots() bool { return f.HoldSlots }

// localTPS: a cluster's links take no slots from the shared schedule.
//
//go:noinline
func (f Faults) localTPS() bool { return f.LocalTPS }

// unwatched: no watchdog notices a pause.
//
//go:noinline
func (f Faults) unwatched() bool { return f.Unwatched }
