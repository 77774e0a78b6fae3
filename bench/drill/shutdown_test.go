package drill

import "testing"

func TestShutdownDrill(t *testing.T) {
	mustPass(t, runDrill(t, "shutdown", ""))
}

// The shutdown drill notices a node that exits at once on SIGTERM, dropping the requests it
// was serving and its engine's unwritten state, and a restart that does not resume the work
// the stop left queued.
func TestShutdownDrillNoticesFaults(t *testing.T) {
	t.Run("abrupt-shutdown", func(t *testing.T) {
		mustFail(t, runDrill(t, "shutdown", "abrupt-shutdown"), "shutdown", "in-flight requests answered")
	})
	t.Run("skip-resume", func(t *testing.T) {
		mustFail(t, runDrill(t, "shutdown", "skip-resume"), "shutdown", "settled")
	})
}
