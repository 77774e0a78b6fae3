package drill

import "testing"

func TestDepsDrill(t *testing.T) {
	mustPass(t, runDrill(t, "deps", ""))
}

// The deps drill notices a network outage that holds up the other networks: with hold-slots
// a job keeps its tenant's dispatch slot until its last outcome, so once a tenant's slots
// are all held by jobs waiting for the network that is down, its other networks stop too.
func TestDepsDrillNoticesFaults(t *testing.T) {
	mustFail(t, runDrill(t, "deps", "hold-slots"), "deps", "network down: others' pace")
}
