package drill

import (
	"io"
	"slices"
	"strings"
	"testing"
)

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

// The security checks probe only a node on loopback.
func TestOnLoopback(t *testing.T) {
	for base, ok := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://[::1]:8080": true, "http://127.0.0.2:1": true,
		"http://10.0.0.5:8080": false, "http://example.com": false, "http://localhost:8080": false, "http://0.0.0.0:80": false,
	} {
		if err := onLoopback(base); (err == nil) != ok {
			t.Errorf("onLoopback(%s) = %v; want ok %v", base, err, ok)
		}
	}
}

// tuma-lab security runs the security checks alone, and their table says so.
func TestSecurityChecksAreNamedSo(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	c, err := ParseSecurityArgs([]string{"--short"}, none, io.Discard)
	if err != nil || !slices.Equal(c.Only, []string{"security"}) || !c.Short || !c.Govulncheck {
		t.Fatalf("ParseSecurityArgs = %+v, %v", c, err)
	}
	if all, err := ParseArgs(nil, none, io.Discard); err != nil || !slices.Equal(all.Only, Names()) || all.Only[len(all.Only)-1] != "security" {
		t.Fatalf("ParseArgs = %v, %v; want every drill, the security checks last", all.Only, err)
	}
	if !strings.Contains(GovulncheckModule, "@v") {
		t.Errorf("govulncheck is not pinned: %s", GovulncheckModule)
	}
	rep := Report{Tool: "tuma-lab drill", Pass: true, Drills: []DrillResult{
		{Name: "crash", Pass: true, Rows: []Row{{Check: "ledger", Figure: "exact", Target: "exact", Pass: true}}},
		{Name: "security", Pass: true, Rows: []Row{{Check: "secrets in logs", Figure: "0 found", Target: "0", Pass: true}}},
	}}
	var b strings.Builder
	if err := rep.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	drills, checks := strings.Index(out, "\nDRILL "), strings.Index(out, "\nSECURITY ")
	if drills < 0 || checks < drills || !strings.Contains(out[checks:], "security  secrets in logs") || strings.Contains(out[drills:checks], "security") {
		t.Errorf("table:\n%s\nwant the reliability drills, then the security checks under their own header", out)
	}
}
