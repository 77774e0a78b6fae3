package drill

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Row is one line of the table: a check of a drill, its figure, its target and the verdict.
type Row struct {
	Drill  string   `json:"drill"`
	Check  string   `json:"check"`
	Figure string   `json:"figure"`          // what was measured, for people
	Value  *float64 `json:"value,omitempty"` // the main number of the figure, for machines
	Unit   string   `json:"unit,omitempty"`
	Target string   `json:"target"`           // "" for a figure reported without a target
	Pass   bool     `json:"pass"`             // true for a figure without a target
	Reason string   `json:"reason,omitempty"` // why it failed
}

// verdict is the row's RESULT: PASS, info (a figure without a target) or FAIL with the reason.
func (row Row) verdict() string {
	switch {
	case row.Target == "" && row.Pass:
		return "info"
	case !row.Pass:
		return "FAIL: " + row.Reason
	}
	return "PASS"
}

// DrillResult is one drill's rows, or the security checks'.
type DrillResult struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"` // "reliability" or "security"
	Pass    bool    `json:"pass"`
	Seconds float64 `json:"seconds"`
	Rows    []Row   `json:"rows"`
}

// Report is a whole run: what --json writes.
type Report struct {
	Tool      string            `json:"tool"`
	StartedAt time.Time         `json:"started_at"`
	Seconds   float64           `json:"seconds"`
	Short     bool              `json:"short"`
	Faults    string            `json:"faults,omitempty"`
	Binary    string            `json:"binary"`
	Machine   map[string]string `json:"machine"`
	Sizes     Sizes             `json:"sizes"`
	WorkDir   string            `json:"work_dir,omitempty"`
	Pass      bool              `json:"pass"`
	Drills    []DrillResult     `json:"drills"`
}

// Failed lists the rows that failed, as "drill/check: reason".
func (r Report) Failed() []string {
	var out []string
	for _, d := range r.Drills {
		for _, row := range d.Rows {
			if !row.Pass {
				out = append(out, d.Name+"/"+row.Check+": "+row.Reason)
			}
		}
	}
	return out
}

// Row finds a drill's row by check name.
func (r Report) Row(drill, check string) (Row, bool) {
	for _, d := range r.Drills {
		if d.Name != drill {
			continue
		}
		for _, row := range d.Rows {
			if row.Check == check {
				return row, true
			}
		}
	}
	return Row{}, false
}

// recorder collects one drill's rows. Safe for concurrent use.
type recorder struct {
	drill    string
	progress io.Writer
	mu       sync.Mutex
	rows     []Row
}

func (r *recorder) add(row Row) {
	row.Drill = r.drill
	r.mu.Lock()
	r.rows = append(r.rows, row)
	r.mu.Unlock()
	r.logf("%s = %s (target %s) %s", row.Check, row.Figure, orDash(row.Target), row.verdict())
}

// check records a row whose verdict is ok; reason says why when it is not.
func (r *recorder) check(check string, ok bool, figure, target, reason string) {
	if ok {
		reason = ""
	} else if reason == "" {
		reason = "figure misses the target"
	}
	r.add(Row{Check: check, Figure: figure, Target: target, Pass: ok, Reason: reason})
}

// value is check with a number attached for --json.
func (r *recorder) value(check string, v float64, unit string, ok bool, figure, target, reason string) {
	if ok {
		reason = ""
	} else if reason == "" {
		reason = "figure misses the target"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	r.add(Row{Check: check, Figure: figure, Value: &v, Unit: unit, Target: target, Pass: ok, Reason: reason})
}

// info records a figure without a target.
func (r *recorder) info(check string, v float64, unit, figure string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	r.add(Row{Check: check, Figure: figure, Value: &v, Unit: unit, Pass: true})
}

// fail records a check that could not be made.
func (r *recorder) fail(check, reason string) {
	r.add(Row{Check: check, Figure: "—", Target: "", Pass: false, Reason: reason})
}

func (r *recorder) logf(format string, a ...any) {
	if r.progress != nil {
		fmt.Fprintf(r.progress, "%s  %-8s "+format+"\n", append([]any{time.Now().Format("15:04:05"), r.drill}, a...)...)
	}
}

func (r *recorder) result(took time.Duration) DrillResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := DrillResult{Name: r.drill, Kind: kind(r.drill), Pass: true, Seconds: took.Seconds(), Rows: append([]Row(nil), r.rows...)}
	for _, row := range d.Rows {
		d.Pass = d.Pass && row.Pass
	}
	if len(d.Rows) == 0 {
		d.Pass = false
	}
	return d
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// kind tells the security checks from the reliability drills.
func kind(name string) string {
	if name == security {
		return "security"
	}
	return "reliability"
}

// Print writes the report as a table: the reliability drills, then the security checks under
// their own header.
func (r Report) Print(w io.Writer) error {
	mode := "full"
	if r.Short {
		mode = "short"
	}
	fmt.Fprintf(w, "\n%s · %s · %s · %s · %s CPUs · %s\n", r.Tool, mode, r.Binary, r.Machine["hostname"], r.Machine["cpus"], r.Machine["go"])
	if r.Faults != "" {
		fmt.Fprintf(w, "faults injected: %s\n", r.Faults)
	}
	for _, k := range []struct{ kind, header, total string }{
		{"reliability", "DRILL", "(drill)"}, {"security", "SECURITY", "(checks)"},
	} {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		headed := false
		for _, d := range r.Drills {
			if kind(d.Name) != k.kind {
				continue
			}
			if !headed {
				fmt.Fprintf(tw, "\n%s\tCHECK\tFIGURE\tTARGET\tRESULT\n", k.header)
				headed = true
			}
			for _, row := range d.Rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Name, row.Check, oneLine(row.Figure), orDash(row.Target), oneLine(row.verdict()))
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f s\t\t%s\n", d.Name, k.total, d.Seconds, passWord(d.Pass))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\n%s in %s", passWord(r.Pass), (time.Duration(r.Seconds) * time.Second).String())
	if r.WorkDir != "" {
		fmt.Fprintf(w, " · logs in %s", r.WorkDir)
	}
	fmt.Fprintln(w)
	return nil
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// WriteJSON writes the report to path.
func (r Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func machine() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{"hostname": host, "cpus": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version(),
		"os": runtime.GOOS + "/" + runtime.GOARCH}
}

// Number formatting for figures.

func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func secs(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

func mb(bytes float64) string { return fmt.Sprintf("%.0f MB", bytes/(1<<20)) }

func kes(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%sKES %s.%02d", sign, count(cents/100), cents%100)
}
