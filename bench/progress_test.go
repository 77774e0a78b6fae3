package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestProgressPlain: off a terminal, every phase ends with a line showing its final counts,
// even phases that came and went between two draws, and nothing is redrawn in place.
func TestProgressPlain(t *testing.T) {
	var out bytes.Buffer
	lv := &live{}
	cfg := Config{Scenario: ScenarioSmall, Accounts: 2, Duration: time.Second}
	p := startProgress(&out, cfg, lv)
	lv.ready.Store(2)
	p.setPhase(phaseLoad)
	lv.requests.Store(1234)
	lv.accepted.Store(1234)
	p.setPhase(phaseDrain)
	lv.final.Store(1234)
	p.stop()
	got := out.String()
	for _, want := range []string{
		"setup [####################] 2/2 accounts\n",
		"requests 1,234  accepted 1,234 msgs  errors 0\n",
		"final 1,234/1,234 msgs\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\r") {
		t.Errorf("redraws off a terminal:\n%q", got)
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is not a terminal")
	}
}
