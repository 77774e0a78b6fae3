package bench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestHeadline(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r Result) {
		t.Helper()
		r.Tool = "tuma bench"
		if err := r.writeJSON(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for i, perS := range []float64{4_000, 9_000, 8_500} {
		r := Result{Scenario: ScenarioSmall}
		r.Throughput.AcceptedPerS = perS
		r.Server = Server{Known: true, CPUMicrosPerMsg: 100, DBCPUSeconds: 1, DBCPUMicrosPerMsg: float64(40 + 20*i)}
		write("small-"+string(rune('a'+i))+".json", r)
	}
	for i, p50 := range []float64{8, 12, 9} {
		r := Result{Scenario: ScenarioBulk}
		r.Latency.P50MS, r.Latency.P99MS = p50, 40
		r.Messages = Messages{Accepted: 1_000_000, Drained: i != 1}
		r.Throughput.FinalPerS = 30_000 + float64(i)*1_000
		write("bulk-"+string(rune('a'+i))+".json", r)
	}
	write("mixed.json", Result{Scenario: ScenarioMixed})
	var out bytes.Buffer
	if err := Headline([]string{filepath.Join(dir, "*.json")}, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1-recipient sends/s, dispatch running  8500 /s  4000–9000 (3)  ≥ 8000  met",
		"CPU per 1-recipient send, server + PostgreSQL  160 µs  140–180 (3)  ≤ 150 µs  MISSED",
		"10,000-recipient send → 202, p50  9 ms  8–12 (3)  ≤ 10 ms  met",
		"10,000-recipient send → 202, p99  40 ms  40–40 (3)  ≤ 30 ms  MISSED",
		"end to end, queued → delivered or failed  31000 msgs/s  30000–32000 (2)  ≥ 40000 msgs/s  MISSED",
	}
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, w := range want {
		if !strings.Contains(got, strings.Join(strings.Fields(w), " ")) {
			t.Errorf("headline lacks %q:\n%s", w, out.String())
		}
	}

	// Without --db-cpu or big enough bulk runs, the figures say what is missing.
	dir2 := t.TempDir()
	r := Result{Tool: "tuma bench", Scenario: ScenarioSmall}
	r.Server.Known = true
	if err := r.writeJSON(filepath.Join(dir2, "small.json")); err != nil {
		t.Fatal(err)
	}
	b := Result{Tool: "tuma bench", Scenario: ScenarioBulk}
	b.Messages.Accepted = 10_000
	if err := b.writeJSON(filepath.Join(dir2, "bulk.json")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Headline([]string{filepath.Join(dir2, "*.json")}, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"run small with --db-cpu", "needs bulk runs of ≥ 1000000 messages"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("headline lacks %q:\n%s", w, out.String())
		}
	}
}
