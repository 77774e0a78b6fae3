// Command benchtable reads `go test -bench` output on stdin and prints the engine benchmarks
// as a table, next to the targets they are held to.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// target is a bound on one reported metric.
type target struct {
	atMost bool // the value must be ≤ limit (else ≥)
	limit  float64
}

func (t target) String() string {
	if t.atMost {
		return "≤ " + strconv.FormatFloat(t.limit, 'f', -1, 64)
	}
	return "≥ " + strconv.FormatFloat(t.limit, 'f', -1, 64)
}

func (t target) met(v float64) bool {
	if t.atMost {
		return v <= t.limit
	}
	return v >= t.limit
}

// targets are the dispatch engine's speed requirements (issue "The dispatch engine").
func targets() map[string]map[string]target {
	return map[string]map[string]target{
		"Accept10k":        {"p50_ms": {true, 20}, "p99_ms": {true, 60}},
		"Dispatch1M":       {"msgs/s": {false, 20_000}},
		"SmallSendsAccept": {"sends/s": {false, 8_000}},
		"QueuedMemory":     {"peak_rss_MB": {true, 300}},
	}
}

// benchLine matches one result line of `go test -bench`.
const benchLine = `^Benchmark(\w+)-\d+\s+\d+\s+(.*)$`

type row struct {
	bench, metric string
	value         float64
}

func parse(r io.Reader) []row {
	var rows []row
	line := regexp.MustCompile(benchLine)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			if f[i+1] == "ns/op" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				rows = append(rows, row{m[1], f[i+1], v})
			}
		}
	}
	return rows
}

func main() {
	rows, goals := parse(os.Stdin), targets()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCHMARK\tMETRIC\tVALUE\tTARGET\t")
	failed := 0
	for _, r := range rows {
		t, ok := goals[r.bench][r.metric]
		verdict, goal := "", ""
		if ok {
			goal = t.String()
			verdict = "ok"
			if !t.met(r.value) {
				verdict = "MISSED"
				failed++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.bench, r.metric, strconv.FormatFloat(r.value, 'f', -1, 64), goal, verdict)
	}
	tw.Flush()
	if failed > 0 {
		fmt.Printf("\n%d target(s) missed on this run. This box varies up to 2x run to run: repeat before concluding.\n", failed)
	}
}
