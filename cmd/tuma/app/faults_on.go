//go:build faults

package app

import (
	"slices"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// faultsBuild: this binary was built for the drills' own tests (go build -tags faults).
const faultsBuild = true

func (f Faults) has(name string) bool { return slices.Contains(f, name) }

func (f Faults) store() persistence.Faults {
	return persistence.Faults{SkipRefunds: f.has("skip-refunds"), CrossTenant: f.has("cross-tenant"),
		SkipCounts: f.has("skip-counts")}
}

func (f Faults) engine() actors.Faults {
	return actors.Faults{SkipResume: f.has("skip-resume"), HoldSlots: f.has("hold-slots"), LocalTPS: f.has("local-tps"),
		Unwatched: f.has("unwatched")}
}

func (f Faults) front() api.Faults {
	return api.Faults{ReleaseKeys: f.has("release-keys"), LogSecrets: f.has("log-secrets"), NoShed: f.has("no-shed")}
}

// abruptShutdown: the node exits at once on SIGTERM, nothing drained (the shutdown drill's fault).
//
//go:noinline
func (f Faults) abruptShutdown() bool { return f.has("abrupt-shutdown") }
