package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// resultTool marks a result file. It names the command as it was when the format began
// (`tuma bench`, before the lab left the server binary), so older results still load.
const resultTool = "tuma bench"

// Result is one run: what the clients saw, what the server's counters say, and the facts
// needed to compare it with another run. It is what --json writes.
type Result struct {
	Tool       string            `json:"tool"`
	RunID      string            `json:"run_id"`
	Scenario   string            `json:"scenario"`
	StartedAt  time.Time         `json:"started_at"`
	Commit     string            `json:"commit,omitempty"`
	Dirty      bool              `json:"dirty,omitempty"` // the work tree had uncommitted changes
	Config     map[string]string `json:"config"`          // the flags of the run
	Machine    Machine           `json:"machine"`
	Requests   Requests          `json:"requests"`
	Messages   Messages          `json:"messages"`
	Latency    Latency           `json:"accept_latency"` // of the sends answered 2xx
	EndToEnd   EndToEnd          `json:"end_to_end_latency"`
	Throughput Throughput        `json:"throughput"`
	Server     Server            `json:"server"`
	Egress     []Egress          `json:"egress,omitempty"`
	Webhooks   *Webhooks         `json:"webhooks,omitempty"` // --webhooks
	Windows    []Window          `json:"windows,omitempty"`
	Accounts   string            `json:"accounts"` // "suspended", "kept", or why not all were suspended
	Problems   []string          `json:"problems"` // checks that failed; empty when the run is sound
	Figures    []Figure          `json:"figures"`  // every number compare looks at
}

// Machine is where the tool ran (the server may be elsewhere).
type Machine struct {
	Hostname  string `json:"hostname"`
	NumCPU    int    `json:"num_cpu"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
	Kernel    string `json:"kernel,omitempty"`
}

// Requests counts the sends by how they were answered.
type Requests struct {
	Total           int64 `json:"total"`
	Status2xx       int64 `json:"status_2xx"`
	Status4xx       int64 `json:"status_4xx"`
	Status429       int64 `json:"status_429"` // included in 4xx
	Status5xx       int64 `json:"status_5xx"`
	StatusOther     int64 `json:"status_other"`
	TransportErrors int64 `json:"transport_errors"`
	BadBodies       int64 `json:"bad_bodies"` // 2xx without recipients_count
	Missed          int64 `json:"missed"`     // open-loop sends no client was free to start
	// Refusals counts the answers that were not 2xx by status and problem code ("503 overloaded").
	Refusals map[string]int64 `json:"refusals,omitempty"`
}

// Messages counts recipients. Accepted comes from the 202s only; delivered and failed from
// the accounts' final statistics.
type Messages struct {
	Offered     int64 `json:"offered"`
	Accepted    int64 `json:"accepted"`
	Delivered   int64 `json:"delivered"`
	Failed      int64 `json:"failed"`
	Unconfirmed int64 `json:"unconfirmed"` // the server holds more than the 202s said (a request timed out after it was taken)
	Drained     bool  `json:"drained"`     // every accepted message reached a final state
}

// Throughput is rates over the run's phases, in seconds and per second.
type Throughput struct {
	LoadS         float64 `json:"load_s"`          // first send to last answer
	DrainS        float64 `json:"drain_s"`         // last answer to every message final
	EndToEndS     float64 `json:"end_to_end_s"`    // first send to every message final
	RequestsPerS  float64 `json:"requests_per_s"`  // over the load
	AcceptedPerS  float64 `json:"accepted_per_s"`  // messages, over the load
	DeliveredPerS float64 `json:"delivered_per_s"` // messages delivered, end to end
	FinalPerS     float64 `json:"final_per_s"`     // messages delivered or failed, end to end
}

// Server is the server's own view, from /metrics deltas over the run.
type Server struct {
	Known           bool    `json:"known"` // false when the final scrape failed: every delta reads 0
	CPUSeconds      float64 `json:"cpu_s"`
	CPUCores        float64 `json:"cpu_cores"`      // CPU seconds per second of the run
	CPUMicrosPerMsg float64 `json:"cpu_us_per_msg"` // per accepted message
	RSSMBEnd        float64 `json:"rss_mb_end"`
	RSSMBMax        float64 `json:"rss_mb_max"` // largest sampled
	Accepted        float64 `json:"accepted"`   // tuma_messages_accepted_total, all networks
	Delivered       float64 `json:"delivered"`  // tuma_messages_delivered_total
	Failed          float64 `json:"failed"`     // tuma_messages_failed_total, every stage
	Send202         float64 `json:"send_202"`   // tuma_http_requests_total{route="/sms/send",code="202"}
	ScrapeErrors    int64   `json:"scrape_errors"`
	// With --db-cpu: the CPU of this machine's PostgreSQL processes over the same span.
	DBCPUSeconds      float64 `json:"db_cpu_s,omitempty"`
	DBCPUMicrosPerMsg float64 `json:"db_cpu_us_per_msg,omitempty"`
}

// Window is a slice of the load phase, to see drift over a long run.
type Window struct {
	FromS       float64 `json:"from_s"`
	ToS         float64 `json:"to_s"`
	Sends       int     `json:"sends"` // accepted
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	MaxMS       float64 `json:"max_ms"`
	ServerRSSMB float64 `json:"server_rss_mb"` // largest sampled in the window
	ServerCores float64 `json:"server_cpu_cores"`
}

// Figure is one number of a run, and which way is better (lower, higher, or "" when neither:
// counts that only describe the run).
type Figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Better string  `json:"better,omitempty"`
}

// Which way a figure is better.
const (
	lowerBetter  = "lower"
	higherBetter = "higher"
)

// observed is everything a run measured, before it is summarised.
type observed struct {
	cfg         Config
	runID       string
	started     time.Time
	load        loadResult
	drain       drainResult
	base, final snapshot
	samples     []snapshot
	finalOK     bool       // the final scrape worked: the server's deltas are known
	dbCPU       [2]float64 // --db-cpu: PostgreSQL's CPU seconds at the base and final scrapes
	dbCPUOK     bool
	scrapeErrs  int64
	e2e         EndToEnd
	hooks       *Webhooks
}

// newResult summarises a run and checks its numbers against each other.
func newResult(ctx context.Context, o observed) Result {
	r := Result{
		Tool: resultTool, RunID: o.runID, Scenario: o.cfg.Scenario, StartedAt: o.started.UTC(),
		Config: o.cfg.flags(), Machine: machine(),
	}
	r.Commit, r.Dirty = gitCommit(ctx)
	l, d := o.load, o.drain
	r.Requests = Requests{Total: l.requests, Status2xx: l.s2xx, Status4xx: l.s4xx, Status429: l.s429,
		Status5xx: l.s5xx, StatusOther: l.sOther, TransportErrors: l.transport, BadBodies: l.badBody, Missed: l.missed,
		Refusals: l.codes}
	r.Messages = Messages{Offered: l.offered, Accepted: l.accepted, Delivered: d.stats.Delivered,
		Failed: d.stats.Failed, Unconfirmed: d.unconfirmed, Drained: d.drained}
	r.Windows = windows(l, o.samples)
	r.Latency = summarise(slices.Clone(l.lat)) // sorting in place would unpair lat and at
	r.EndToEnd = o.e2e

	loadS := l.end.Sub(l.start).Seconds()
	t := Throughput{LoadS: loadS, RequestsPerS: ratio(float64(l.requests), loadS),
		AcceptedPerS: ratio(float64(l.accepted), loadS)}
	if d.drained {
		t.DrainS = max(0, d.at.Sub(l.end).Seconds())
		t.EndToEndS = d.at.Sub(l.start).Seconds()
		t.DeliveredPerS = ratio(float64(d.stats.Delivered), t.EndToEndS)
		t.FinalPerS = ratio(float64(d.stats.Delivered+d.stats.Failed), t.EndToEndS)
	}
	r.Throughput = t

	b, f := o.base, o.final
	if !o.finalOK {
		f = b // deltas of 0, flagged as unknown below
	}
	wall := f.at.Sub(b.at).Seconds()
	r.Server = Server{Known: o.finalOK,
		CPUSeconds: f.cpu - b.cpu, CPUCores: ratio(f.cpu-b.cpu, wall),
		CPUMicrosPerMsg: ratio((f.cpu-b.cpu)*1e6, float64(l.accepted)),
		RSSMBEnd:        f.rss / (1 << 20), RSSMBMax: f.rss / (1 << 20),
		Accepted: f.accepted - b.accepted, Delivered: f.delivered - b.delivered, Failed: f.failed - b.failed,
		Send202: f.send202 - b.send202, ScrapeErrors: o.scrapeErrs,
	}
	if o.dbCPUOK {
		r.Server.DBCPUSeconds = o.dbCPU[1] - o.dbCPU[0]
		r.Server.DBCPUMicrosPerMsg = ratio(r.Server.DBCPUSeconds*1e6, float64(l.accepted))
	}
	for _, s := range o.samples {
		r.Server.RSSMBMax = max(r.Server.RSSMBMax, s.rss/(1<<20))
	}
	if o.cfg.Scenario == ScenarioThrottled {
		all := append([]snapshot{b}, o.samples...)
		if o.finalOK {
			all = append(all, f)
		}
		r.Egress = measureEgress(all, o.cfg.Caps)
	}
	r.Webhooks = o.hooks
	r.Problems = r.check()
	if r.Webhooks != nil {
		r.Problems = append(r.Problems, r.Webhooks.problems()...)
	}
	r.Figures = r.figures()
	return r
}

// check compares the run's numbers with each other and with the server's counters.
func (r Result) check() []string {
	p := []string{} // [] rather than null in the JSON of a sound run
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	m, s := r.Messages, r.Server
	if !m.Drained {
		add("not drained: %d of %d accepted messages reached a final state before --timeout", m.Delivered+m.Failed, m.Accepted)
	}
	if m.Drained && m.Delivered+m.Failed != m.Accepted+m.Unconfirmed {
		add("delivered %d + failed %d ≠ accepted %d", m.Delivered, m.Failed, m.Accepted+m.Unconfirmed)
	}
	if m.Unconfirmed > 0 {
		add("the server holds %d messages more than its 202s said: requests that timed out after the server took them", m.Unconfirmed)
	}
	switch {
	case !s.Known:
		add("the final scrape of /metrics failed: the server's counters are unknown")
	default:
		if s.Accepted != float64(m.Accepted+m.Unconfirmed) {
			add("server counted %.0f messages accepted, the tool %d (is other traffic on this server?)", s.Accepted, m.Accepted+m.Unconfirmed)
		}
		if s.Send202 != float64(r.Requests.Status2xx) {
			add("server answered %.0f sends with 202, the tool saw %d", s.Send202, r.Requests.Status2xx)
		}
		if m.Drained && (s.Delivered != float64(m.Delivered) || s.Failed != float64(m.Failed)) {
			add("server counted %.0f delivered and %.0f failed, the accounts' statistics %d and %d", s.Delivered, s.Failed, m.Delivered, m.Failed)
		}
	}
	if r.Requests.BadBodies > 0 {
		add("%d sends answered 2xx without recipients_count (counted as every recipient sent)", r.Requests.BadBodies)
	}
	if r.Requests.Missed > 0 {
		add("offered rate not met: %d sends were due while every client was busy (raise --concurrency)", r.Requests.Missed)
	}
	if r.Server.ScrapeErrors > 0 {
		add("%d scrapes of /metrics failed", r.Server.ScrapeErrors)
	}
	for _, e := range r.Egress {
		if !e.Pass {
			add("egress of %s: %s (avg %.2f/s, max 1 s %.1f, cap %g)", e.Network, e.Note, e.AvgPerS, e.Max1s, e.Cap)
		}
	}
	return p
}

// figures lists every number compare looks at.
func (r Result) figures() []Figure {
	var fs []Figure
	add := func(name string, v float64, unit, better string) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		fs = append(fs, Figure{Name: name, Value: v, Unit: unit, Better: better})
	}
	q, m, t, s, l := r.Requests, r.Messages, r.Throughput, r.Server, r.Latency
	add("requests", float64(q.Total), "requests", "")
	add("http_4xx", float64(q.Status4xx), "requests", lowerBetter)
	add("http_5xx", float64(q.Status5xx), "requests", lowerBetter)
	add("transport_errors", float64(q.TransportErrors), "requests", lowerBetter)
	add("missed_sends", float64(q.Missed), "sends", lowerBetter)
	add("accepted_messages", float64(m.Accepted), "messages", "")
	add("accept_p50", l.P50MS, "ms", lowerBetter)
	add("accept_p90", l.P90MS, "ms", lowerBetter)
	add("accept_p99", l.P99MS, "ms", lowerBetter)
	add("accept_max", l.MaxMS, "ms", lowerBetter)
	add("requests_per_s", t.RequestsPerS, "/s", higherBetter)
	add("accepted_per_s", t.AcceptedPerS, "msgs/s", higherBetter)
	add("delivered_per_s", t.DeliveredPerS, "msgs/s", higherBetter)
	add("final_per_s", t.FinalPerS, "msgs/s", higherBetter)
	add("end_to_end", t.EndToEndS, "s", lowerBetter)
	if e := r.EndToEnd; e.Sampled > 0 {
		add("e2e_p50", e.P50MS, "ms", lowerBetter)
		add("e2e_p99", e.P99MS, "ms", lowerBetter)
	}
	add("drain", t.DrainS, "s", lowerBetter)
	if s.Known { // else they read 0, which compare would take for a change
		add("server_cpu_cores", s.CPUCores, "cores", "")
		add("server_cpu_per_msg", s.CPUMicrosPerMsg, "µs", lowerBetter)
		add("server_rss_end", s.RSSMBEnd, "MB", lowerBetter)
		add("server_rss_max", s.RSSMBMax, "MB", lowerBetter)
	}
	if s.DBCPUSeconds > 0 {
		add("db_cpu_per_msg", s.DBCPUMicrosPerMsg, "µs", lowerBetter)
	}
	if w := r.Webhooks; w != nil {
		add("webhook_events_per_s", w.EventsPerS, "events/s", higherBetter)
		add("webhook_latency_p50", w.Latency.P50MS, "ms", lowerBetter)
		add("webhook_latency_p99", w.Latency.P99MS, "ms", lowerBetter)
		add("webhook_lost", float64(w.Lost), "events", lowerBetter)
	}
	for _, e := range r.Egress {
		add("egress_"+e.Network+"_avg", e.AvgPerS, "msgs/s", "")
		add("egress_"+e.Network+"_error", e.AvgErrorPct, "%", lowerBetter)
		add("egress_"+e.Network+"_max_1s", e.Max1s, "msgs", lowerBetter)
	}
	if w := r.Windows; len(w) >= 2 && r.Scenario == ScenarioSoak {
		add("soak_p99_drift", w[len(w)-1].P99MS-w[0].P99MS, "ms", "")
		add("soak_rss_drift", w[len(w)-1].ServerRSSMB-w[0].ServerRSSMB, "MB", "")
	}
	return fs
}

// windows cuts the load phase into up to ten slices, with the server's memory and CPU in each.
func windows(l loadResult, samples []snapshot) []Window {
	loadD := l.end.Sub(l.start)
	n := min(10, max(1, int(loadD/time.Second)))
	if loadD <= 0 || len(l.lat) == 0 {
		return nil
	}
	width := loadD / time.Duration(n)
	lats := make([][]time.Duration, n)
	for i, at := range l.at {
		k := min(int(at/width), n-1)
		lats[k] = append(lats[k], l.lat[i])
	}
	out := make([]Window, n)
	for k := range out {
		from, to := l.start.Add(time.Duration(k)*width), l.start.Add(time.Duration(k+1)*width)
		sum := summarise(lats[k])
		w := Window{FromS: (time.Duration(k) * width).Seconds(), ToS: (time.Duration(k+1) * width).Seconds(),
			Sends: sum.Count, P50MS: sum.P50MS, P99MS: sum.P99MS, MaxMS: sum.MaxMS}
		var first, last *snapshot
		for i := range samples {
			s := &samples[i]
			if s.at.Before(from) || s.at.After(to) {
				continue
			}
			if first == nil {
				first = s
			}
			last = s
			w.ServerRSSMB = max(w.ServerRSSMB, s.rss/(1<<20))
		}
		if first != nil && last != first {
			w.ServerCores = ratio(last.cpu-first.cpu, last.at.Sub(first.at).Seconds())
		}
		out[k] = w
	}
	return out
}

// machine describes this host.
func machine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// gitCommit is the commit of the working directory's repository, if it is one. It runs even
// after an interruption: the results of an interrupted run are still written.
func gitCommit(ctx context.Context) (commit string, dirty bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), err == nil && len(strings.TrimSpace(string(st))) > 0
}

// writeJSON writes the result to path.
func (r Result) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// ReadResult reads a file written by --json.
func ReadResult(path string) (Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Result{}, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	if r.Tool != resultTool {
		return Result{}, fmt.Errorf("%s is not a tuma-lab bench result", path)
	}
	return r, nil
}

// print writes the result as tables.
func (r Result) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	c := r.Config
	mode := "closed loop"
	switch {
	case r.Scenario == ScenarioThrottled:
		mode = "caps " + c["caps"]
	case c["rate"] != "0":
		mode = c["rate"] + " sends/s offered"
	}
	commit := "commit unknown"
	if r.Commit != "" {
		commit = "commit " + r.Commit[:min(12, len(r.Commit))]
		if r.Dirty {
			commit += " (dirty)"
		}
	}
	fmt.Fprintf(tw, "\ntuma-lab bench · %s · %s · %s accounts · %s clients · %s · %s\n", r.Scenario, c["url"],
		c["accounts"], c["concurrency"], c["duration"], mode)
	fmt.Fprintf(tw, "%s · %s · %s/%s · %d CPUs · %s\n\n", commit, r.Machine.Hostname, r.Machine.GOOS,
		r.Machine.GOARCH, r.Machine.NumCPU, r.Machine.GoVersion)

	q, m, s, t, l := r.Requests, r.Messages, r.Server, r.Throughput, r.Latency
	agree := func(ok bool) string {
		switch {
		case !s.Known:
			return "unknown"
		case ok:
			return "agree"
		}
		return "DIFFER"
	}
	fmt.Fprintln(tw, "\ttool\tserver /metrics Δ\t")
	fmt.Fprintf(tw, "send requests\t%s\t\t\n", count(q.Total))
	fmt.Fprintf(tw, "  2xx\t%s\t%s (202)\t%s\n", count(q.Status2xx), count(int64(s.Send202)), agree(s.Send202 == float64(q.Status2xx)))
	fmt.Fprintf(tw, "  4xx (of which 429)\t%s (%s)\t\t\n", count(q.Status4xx), count(q.Status429))
	fmt.Fprintf(tw, "  5xx\t%s\t\t\n", count(q.Status5xx))
	for _, k := range slices.Sorted(maps.Keys(q.Refusals)) {
		fmt.Fprintf(tw, "    %s\t%s\t\t\n", k, count(q.Refusals[k]))
	}
	fmt.Fprintf(tw, "  transport errors\t%s\t\t\n", count(q.TransportErrors))
	if q.Missed > 0 {
		fmt.Fprintf(tw, "  missed (no free client)\t%s\t\t\n", count(q.Missed))
	}
	fmt.Fprintf(tw, "messages offered\t%s\t\t\n", count(m.Offered))
	fmt.Fprintf(tw, "messages accepted\t%s\t%s\t%s\n", count(m.Accepted), count(int64(s.Accepted)),
		agree(s.Accepted == float64(m.Accepted+m.Unconfirmed)))
	fmt.Fprintf(tw, "messages delivered\t%s\t%s\t%s\n", count(m.Delivered), count(int64(s.Delivered)), agree(s.Delivered == float64(m.Delivered)))
	fmt.Fprintf(tw, "messages failed\t%s\t%s\t%s\n", count(m.Failed), count(int64(s.Failed)), agree(s.Failed == float64(m.Failed)))
	fmt.Fprintf(tw, "all final\t%v\t\t\n", m.Drained)
	if err := tw.Flush(); err != nil { // the lines below have their own columns
		return err
	}
	fmt.Fprintf(tw, "\naccept latency (2xx)\tp50 %s · p90 %s · p99 %s · max %s  (%s sends, mean %s)\n",
		msStr(l.P50MS), msStr(l.P90MS), msStr(l.P99MS), msStr(l.MaxMS), count(int64(l.Count)), msStr(l.MeanMS))
	fmt.Fprintf(tw, "load\t%.2f s · %s requests/s · %s msgs/s accepted\n", t.LoadS, rate(t.RequestsPerS), rate(t.AcceptedPerS))
	if m.Drained {
		fmt.Fprintf(tw, "end to end (send → all final)\t%.2f s, of which %.2f s draining after the last answer\n", t.EndToEndS, t.DrainS)
		fmt.Fprintf(tw, "  end-to-end rate\t%s msgs/s delivered · %s msgs/s delivered or failed\n", rate(t.DeliveredPerS), rate(t.FinalPerS))
		fmt.Fprintf(tw, "  send → delivered\t%s\n", r.EndToEnd)
	}
	fmt.Fprintf(tw, "server CPU\t%.2f cores · %.1f s · %.0f µs per accepted message\n", s.CPUCores, s.CPUSeconds, s.CPUMicrosPerMsg)
	if s.DBCPUSeconds > 0 {
		fmt.Fprintf(tw, "database CPU\t%.1f s · %.0f µs per accepted message (server and database: %.0f µs)\n",
			s.DBCPUSeconds, s.DBCPUMicrosPerMsg, s.CPUMicrosPerMsg+s.DBCPUMicrosPerMsg)
	}
	fmt.Fprintf(tw, "server RSS\t%.0f MB at the end · %.0f MB largest sampled\n", s.RSSMBEnd, s.RSSMBMax)
	fmt.Fprintf(tw, "accounts\t%s\n", r.Accounts)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Egress) > 0 {
		fmt.Fprintln(tw, "\negress\tcap/s\tsteady avg/s\terror\tmax 1 s (steady)\tmax 1 s (whole run)\tsteady s\tverdict")
		for _, e := range r.Egress {
			verdict := "pass"
			if !e.Pass {
				verdict = "FAIL: " + e.Note
			}
			fmt.Fprintf(tw, "%s\t%g\t%.2f\t%.2f%%\t%.1f\t%.1f\t%.1f\t%s\n", e.Network, e.Cap, e.AvgPerS, e.AvgErrorPct,
				e.Max1s, e.Max1sAll, e.SteadyS, verdict)
		}
		fmt.Fprintf(tw, "(pass: |avg − cap| ≤ 2%% of cap and max 1 s ≤ cap × 1.02 + 1, over the steady part: the first and last 2 s left out)\n")
	}
	if len(r.Windows) > 0 && r.Scenario == ScenarioSoak {
		fmt.Fprintln(tw, "\nwindow\tsends\tp50\tp99\tmax\tserver RSS\tserver CPU")
		for _, win := range r.Windows {
			fmt.Fprintf(tw, "%.0f–%.0f s\t%s\t%s\t%s\t%s\t%.0f MB\t%.2f cores\n", win.FromS, win.ToS, count(int64(win.Sends)),
				msStr(win.P50MS), msStr(win.P99MS), msStr(win.MaxMS), win.ServerRSSMB, win.ServerCores)
		}
	}
	if r.Webhooks != nil {
		r.Webhooks.print(tw)
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(tw, "\nchecks: the tool and the server agree")
	} else {
		fmt.Fprintln(tw, "\nPROBLEMS:")
		for _, p := range r.Problems {
			fmt.Fprintln(tw, "  - "+p)
		}
	}
	return tw.Flush()
}

func msStr(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func rate(v float64) string { return count(int64(math.Round(v))) }
