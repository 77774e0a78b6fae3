// tuma-lab bench headline: the four figures of the engine's speed targets (issue 16), read from
// `tuma-lab bench` result files and printed next to their targets, each the median of its runs
// with their spread.

package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// The engine's targets, on a 2-core box, networks answering in 1 ms.
const (
	targetSmallPerS     = 8_000  // 1-recipient sends/s accepted, dispatch and receipts running
	targetSmallCPU      = 150    // µs of CPU per 1-recipient send, server and PostgreSQL together
	targetBulkP50MS     = 10     // a 10,000-recipient send's durable 202, p50 …
	targetBulkP99MS     = 30     // … and p99, while other sends dispatch
	targetEndToEndPerS  = 40_000 // messages/s queued → final, over at least …
	endToEndMinMessages = 1_000_000
)

// headlineRow is one figure: its runs' values and whether the median meets the target.
type headlineRow struct {
	name, target string
	values       []float64
	unit         string
	ok           func(median float64) bool
	note         string
}

// Headline prints the four figures from the results of `small` and `bulk` runs (other
// scenarios are ignored); a figure without runs says so.
func Headline(paths []string, w io.Writer) error {
	files, err := expand(paths)
	if err != nil {
		return err
	}
	var small, bulk []Result
	for _, f := range files {
		r, err := ReadResult(f)
		if err != nil {
			return err
		}
		switch r.Scenario {
		case ScenarioSmall:
			small = append(small, r)
		case ScenarioBulk:
			bulk = append(bulk, r)
		}
	}
	rows := headlineRows(small, bulk)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmedian\tspread (runs)\ttarget\t\t")
	for _, r := range rows {
		if len(r.values) == 0 {
			fmt.Fprintf(tw, "%s\t–\t(0)\t%s\tnot measured\t%s\n", r.name, r.target, r.note)
			continue
		}
		m := median(r.values)
		verdict := "met"
		if !r.ok(m) {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%.0f %s\t%.0f–%.0f (%d)\t%s\t%s\t%s\n", r.name, m, r.unit,
			slices.Min(r.values), slices.Max(r.values), len(r.values), r.target, verdict, r.note)
	}
	return tw.Flush()
}

func headlineRows(small, bulk []Result) []headlineRow {
	perS := headlineRow{name: "1-recipient sends/s, dispatch running", target: fmt.Sprintf("≥ %d", targetSmallPerS),
		unit: "/s", ok: func(m float64) bool { return m >= targetSmallPerS }}
	cpu := headlineRow{name: "CPU per 1-recipient send, server + PostgreSQL", target: fmt.Sprintf("≤ %d µs", targetSmallCPU),
		unit: "µs", ok: func(m float64) bool { return m <= targetSmallCPU }}
	for _, r := range small {
		perS.values = append(perS.values, r.Throughput.AcceptedPerS)
		if r.Server.Known && r.Server.DBCPUSeconds > 0 {
			cpu.values = append(cpu.values, r.Server.CPUMicrosPerMsg+r.Server.DBCPUMicrosPerMsg)
		}
	}
	if len(small) > 0 && len(cpu.values) == 0 {
		cpu.note = "(run small with --db-cpu)"
	}
	p50 := headlineRow{name: "10,000-recipient send → 202, p50", target: fmt.Sprintf("≤ %d ms", targetBulkP50MS),
		unit: "ms", ok: func(m float64) bool { return m <= targetBulkP50MS }}
	p99 := headlineRow{name: "10,000-recipient send → 202, p99", target: fmt.Sprintf("≤ %d ms", targetBulkP99MS),
		unit: "ms", ok: func(m float64) bool { return m <= targetBulkP99MS }}
	e2e := headlineRow{name: "end to end, queued → delivered or failed", target: fmt.Sprintf("≥ %d msgs/s", targetEndToEndPerS),
		unit: "msgs/s", ok: func(m float64) bool { return m >= targetEndToEndPerS }}
	for _, r := range bulk {
		p50.values = append(p50.values, r.Latency.P50MS)
		p99.values = append(p99.values, r.Latency.P99MS)
		if r.Messages.Accepted >= endToEndMinMessages && r.Messages.Drained {
			e2e.values = append(e2e.values, r.Throughput.FinalPerS)
		}
	}
	if len(bulk) > 0 && len(e2e.values) == 0 {
		e2e.note = fmt.Sprintf("(needs bulk runs of ≥ %d messages, all final)", endToEndMinMessages)
	}
	return []headlineRow{perS, cpu, p50, p99, e2e}
}
