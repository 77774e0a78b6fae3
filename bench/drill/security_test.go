package drill

import "testing"

func TestSecurityDrill(t *testing.T) {
	mustPass(t, runDrill(t, "security", ""))
}

// The security drill notices a front door that writes credentials to its log, and a lookup
// that finds another tenant's message.
func TestSecurityDrillNoticesFaults(t *testing.T) {
	t.Run("log-secrets", func(t *testing.T) {
		mustFail(t, runDrill(t, "security", "log-secrets"), "security", "secrets in logs")
	})
	t.Run("cross-tenant", func(t *testing.T) {
		mustFail(t, runDrill(t, "security", "cross-tenant"), "security", "cross-tenant ids → 404")
	})
}
