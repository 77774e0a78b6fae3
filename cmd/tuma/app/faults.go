// Faults: deliberate defects the drills turn on in their own tests, to prove each drill
// notices what it checks for. Only a binary built with -tags faults accepts them: it
// translates them into each layer's Faults in faults_on.go; faults_off.go has only zero values.

package app

import (
	"fmt"
	"slices"
	"strings"
)

// faultNames are the defects TUMA_FAULTS may name.
var faultNames = []string{"skip-refunds", "skip-counts", "skip-resume", "release-keys", "hold-slots", "log-secrets", "cross-tenant", "abrupt-shutdown", "no-shed", "local-tps", "unwatched"}

// Faults is the parsed TUMA_FAULTS.
type Faults []string

func (f *Faults) parse(v string) error {
	*f = nil
	if v == "" {
		return nil
	}
	if !faultsBuild {
		return fmt.Errorf("needs a binary built with -tags faults (the drills build one); this one is not")
	}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(faultNames, name) {
			return fmt.Errorf("unknown fault %q (%s)", name, strings.Join(faultNames, ", "))
		}
		*f = append(*f, name)
	}
	return nil
}

func (f Faults) String() string { return strings.Join(f, ",") }
