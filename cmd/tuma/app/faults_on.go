//go:build faults

package app

import (
	"github.com/tuma-sms/tuma/actors"
)

// faultsBuild: this binary was built for the drills' own tests (go build -tags faults).
const faultsBuild = true

func (f Faults) engine() actors.Faults {
	return actors.Faults{SkipResume: f.has("skip-resume"), HoldSlots: f.has("hold-slots")}
}
