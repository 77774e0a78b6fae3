//go:build !faults

package app

import (
	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// faultsBuild: this binary refuses TUMA_FAULTS, so every layer gets its zero Faults and every
// hook is a constant.
const faultsBuild = false

func (Faults) store() persistence.Faults { return persistence.Faults{} }

func (Faults) engine() actors.Faults { return actors.Faults{} }

func (Faults) front() api.Faults { return api.Faults{} }

func (Faults) abruptShutdown() bool { return false }
