package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummaryOneLinePerRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r Result) {
		r.Tool = "tuma bench"
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.json", Result{Scenario: "bulk", Requests: Requests{Total: 20}, Messages: Messages{Accepted: 200_000},
		Throughput: Throughput{AcceptedPerS: 20000, FinalPerS: 18000, EndToEndS: 11.1}, Latency: Latency{P50MS: 12.5, P99MS: 40.25}})
	write("b.json", Result{Scenario: "throttled", Egress: []Egress{{Network: "telkom"}}})
	write("c.json", Result{Scenario: "small", Problems: []string{"not drained"}})
	var out strings.Builder
	if err := Summary([]string{filepath.Join(dir, "*.json")}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("summary has %d lines; want a header and 3 runs:\n%s", len(lines), out.String())
	}
	for i, want := range [][]string{{"bulk", "200000", "20000", "18000", "12.5", "40.2", "ok"},
		{"throttled", "egress within 2%"}, {"small", "not drained"}} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %q lacks %q", lines[i+1], w)
			}
		}
	}
	if err := Summary([]string{filepath.Join(dir, "none*.json")}, &out); err == nil {
		t.Error("no matching files: no error")
	}
}
