package bench

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func result(scenario string, figs ...Figure) Result {
	return Result{Tool: "tuma bench", Scenario: scenario, Config: map[string]string{"scenario": scenario}, Figures: figs}
}

func fig(name string, v float64, better string) Figure {
	return Figure{Name: name, Value: v, Unit: "x", Better: better}
}

func byName(cs []Comparison) map[string]Comparison {
	m := map[string]Comparison{}
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

func TestCompareMediansAndDirection(t *testing.T) {
	// Each side has an outlier (the box varies 2× run to run): medians ignore it.
	old := []Result{
		result("small", fig("p99", 10, lowerBetter), fig("rate", 1000, higherBetter), fig("count", 5, "")),
		result("small", fig("p99", 11, lowerBetter), fig("rate", 400, higherBetter), fig("count", 5, "")),
		result("small", fig("p99", 30, lowerBetter), fig("rate", 1100, higherBetter), fig("count", 5, "")),
	}
	cur := []Result{
		result("small", fig("p99", 14, lowerBetter), fig("rate", 700, higherBetter), fig("count", 50, "")),
		result("small", fig("p99", 14.5, lowerBetter), fig("rate", 2000, higherBetter), fig("count", 50, "")),
		result("small", fig("p99", 5, lowerBetter), fig("rate", 700, higherBetter), fig("count", 50, "")),
	}
	cs := byName(compareResults(old, cur, 25))
	if c := cs["p99"]; c.Old != 11 || c.New != 14 || c.OldN != 3 || math.Abs(c.ChangePct-27.27) > 0.01 || c.Verdict != verdictRegression {
		t.Errorf("p99 = %+v; want 11 → 14, +27%%, a regression", c)
	}
	if c := cs["rate"]; c.Old != 1000 || c.New != 700 || c.Verdict != verdictRegression {
		t.Errorf("rate = %+v; want 1000 → 700, a regression", c)
	}
	if c := cs["count"]; c.Verdict != "" {
		t.Errorf("count = %+v; a figure with no better direction is never flagged", c)
	}
	// A higher threshold calls the same changes noise.
	cs = byName(compareResults(old, cur, 35))
	if cs["p99"].Verdict != "" || cs["rate"].Verdict != "" {
		t.Errorf("at 35%%: %+v", cs)
	}
	// The reverse direction is an improvement (rate +43%) or noise (p99 −21%), never a regression.
	cs = byName(compareResults(cur, old, 25))
	if cs["p99"].Verdict != "" || cs["rate"].Verdict != verdictImprovement {
		t.Errorf("reversed: %+v", cs)
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		old, new float64
		better   string
		change   float64
		verdict  string
	}{
		{100, 124, lowerBetter, 24, ""},
		{100, 126, lowerBetter, 26, verdictRegression},
		{100, 74, lowerBetter, -26, verdictImprovement},
		{100, 74, higherBetter, -26, verdictRegression},
		{100, 126, higherBetter, 26, verdictImprovement},
		{100, 76, higherBetter, -24, ""},
		{0, 0, lowerBetter, 0, ""},
		{0, 3, lowerBetter, math.NaN(), verdictRegression}, // 5xx appearing from none
		{0, 3, higherBetter, math.NaN(), verdictImprovement},
		{-10, -5, lowerBetter, 50, verdictRegression},
	} {
		change, verdict := judge(tc.old, tc.new, tc.better, 25)
		if verdict != tc.verdict || !(change == tc.change || math.IsNaN(change) && math.IsNaN(tc.change) || math.Abs(change-tc.change) < 1e-9) {
			t.Errorf("judge(%v → %v, %s) = %v, %q; want %v, %q", tc.old, tc.new, tc.better, change, verdict, tc.change, tc.verdict)
		}
	}
}

func TestCompareMissingFigure(t *testing.T) {
	cs := byName(compareResults([]Result{result("throttled", fig("a", 1, lowerBetter))},
		[]Result{result("throttled", fig("a", 1, lowerBetter), fig("b", 9, lowerBetter))}, 25))
	if c := cs["b"]; c.OldN != 0 || c.NewN != 1 || c.Verdict != "" || !math.IsNaN(c.ChangePct) {
		t.Errorf("figure only on the new side = %+v", c)
	}
}

func writeResults(t *testing.T, dir string, rs map[string]Result) {
	t.Helper()
	for name, r := range rs {
		if err := r.writeJSON(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseCompareArgs(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, map[string]Result{"a1.json": {}, "a2.json": {}, "b1.json": {}})
	p := func(s string) string { return filepath.Join(dir, s) }
	o, err := ParseCompareArgs([]string{"--threshold", "10", p("a*.json"), "--", p("b1.json")}, &bytes.Buffer{})
	if err != nil || o.Threshold != 10 || len(o.Old) != 2 || len(o.New) != 1 {
		t.Fatalf("globs and -- = %+v, %v", o, err)
	}
	o, err = ParseCompareArgs([]string{p("a1.json"), p("b1.json")}, &bytes.Buffer{})
	if err != nil || o.Threshold != DefaultThreshold || o.Old[0] != p("a1.json") || o.New[0] != p("b1.json") {
		t.Fatalf("two files = %+v, %v", o, err)
	}
	for _, bad := range [][]string{
		{p("a1.json")},
		{p("a1.json"), p("a2.json"), p("b1.json")},
		{p("a1.json"), "--"},
		{"--threshold", "0", p("a1.json"), p("b1.json")},
		{"--threshold", "-5", p("a1.json"), p("b1.json")},
		{p("zz*.json"), "--", p("b1.json")},
	} {
		if _, err := ParseCompareArgs(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, map[string]Result{
		"old1.json": result("bulk", fig("accept_p99", 10, lowerBetter), fig("accepted_per_s", 100, higherBetter)),
		"old2.json": result("bulk", fig("accept_p99", 12, lowerBetter), fig("accepted_per_s", 110, higherBetter)),
		"new1.json": result("bulk", fig("accept_p99", 20, lowerBetter), fig("accepted_per_s", 105, higherBetter)),
		"new2.json": result("small", fig("accept_p99", 22, lowerBetter), fig("accepted_per_s", 104, higherBetter)),
	})
	var out bytes.Buffer
	err := Compare(CompareOptions{Old: []string{filepath.Join(dir, "old1.json"), filepath.Join(dir, "old2.json")},
		New: []string{filepath.Join(dir, "new1.json"), filepath.Join(dir, "new2.json")}, Threshold: 25}, &out)
	if !errors.Is(err, ErrRegression) || !strings.Contains(err.Error(), "accept_p99") || strings.Contains(err.Error(), "accepted_per_s") {
		t.Errorf("compare = %v; want a regression of accept_p99 only", err)
	}
	for _, want := range []string{"REGRESSION", "+90.9%", "scenarios differ", "median of 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// A file that is not a result is refused.
	junk := filepath.Join(dir, "junk.json")
	if err := os.WriteFile(junk, []byte(`{"x":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Compare(CompareOptions{Old: []string{junk}, New: []string{junk}, Threshold: 25}, &out); err == nil {
		t.Error("compare of a non-result: want an error")
	}
}
