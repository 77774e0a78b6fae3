//go:build !faults

package app

import (
	"github.com/tuma-sms/tuma/actors"
)

// faultsBuild: this binary refuses TUMA_FAULTS.
const faultsBuild = false

func (Faults) engine() actors.Faults { return actors.Faults{} }
