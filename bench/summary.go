package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Summary prints one line per result file: the headline figures of several runs side by
// side (what `make bench` ends with).
func Summary(paths []string, w io.Writer) error {
	files, err := expand(paths)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsends\tmsgs accepted\taccepted/s\tdelivered+failed/s\taccept p50 ms\tp99 ms\tdelivered p50 ms\tp99 ms\tserver CPU µs/msg\tserver RSS MB\tverdict\t")
	for _, f := range files {
		r, err := ReadResult(f)
		if err != nil {
			return err
		}
		verdict := "ok"
		if len(r.Problems) > 0 {
			verdict = strings.Join(r.Problems, "; ")
		} else if len(r.Egress) > 0 {
			verdict = "egress within 2% of every cap"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t\n", r.Scenario, r.Requests.Total,
			r.Messages.Accepted, r.Throughput.AcceptedPerS, r.Throughput.FinalPerS, r.Latency.P50MS, r.Latency.P99MS,
			r.EndToEnd.P50MS, r.EndToEnd.P99MS, r.Server.CPUMicrosPerMsg, r.Server.RSSMBMax, verdict)
	}
	return tw.Flush()
}
