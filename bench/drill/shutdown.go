package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// shutdownTimeout is TUMA_SHUTDOWN_TIMEOUT of the shutdown drill's node.
const shutdownTimeout = 10 * time.Second

// shutdownDrill: tenants send steadily while the node is told to stop (SIGTERM). Requests in
// flight at the signal — a few deliberately caught half-written, the load's own — must be
// answered; new connections must be refused (or answered 503) from then on; the process must
// exit 0 within TUMA_SHUTDOWN_TIMEOUT with its actors drained (the progress log folded),
// connections that sent nothing notwithstanding.
// Dispatch is capped so work is still queued at the signal: started again, the node must
// resume it, and every invariant holds (every accepted message final exactly once, ledgers,
// keys), the clients having retried what the stop refused.
func shutdownDrill(ctx context.Context, r *runner, rec *recorder) error {
	const tenantsN, workers, slowN = 4, 8, 4
	n, err := r.node("shutdown", map[string]string{
		"TUMA_SHUTDOWN_TIMEOUT": shutdownTimeout.String(),
		// Work still queued at the signal, for the restart to resume.
		"TUMA_LINK_TPS": "safaricom=300,airtel=300,telkom=300",
		// Receipts come with the submit's answer, so the drain writes them instead of leaving
		// them to the stale-sent sweep of the next start (a minute away): a simulator's receipts
		// live in the process, a carrier's would be delivered again.
		"TUMA_SIM_RECEIPT_DELAY": "0s",
	})
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	tenants, err := r.tenants(ctx, n.c, "shutdown", tenantsN, 5000)
	if err != nil {
		return err
	}

	// The load: each worker sends 1 to 20 recipients every 50 ms until told to stop, each
	// send retried with its key until definite, across the stop and the restart.
	var stop atomic.Bool
	var signalAt atomic.Int64 // unix ns of SIGTERM, 0 before
	var flight inFlight
	seq := make([]int, workers)
	sizes := []int{1, 5, 20, 10}
	next := func(w int) (send, bool) {
		if stop.Load() {
			return send{}, false
		}
		i := seq[w]
		seq[w]++
		time.Sleep(50 * time.Millisecond)
		size := sizes[(i+w)%len(sizes)]
		return send{t: tenants[w%len(tenants)], key: fmt.Sprintf("shutdown-%s-%d-%d", r.id, w, i), n: size,
			body: sendBody(w*100_000+i*25, size, "Drill: your order has shipped")}, true
	}
	ld := newLoad(n.c, 3*time.Minute)
	ld.onAttempt = func(rp reply) { flight.note(rp, signalAt.Load()) }
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		ld.run(ctx, workers, next)
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.sizes.ShutdownLoad):
	}

	// Requests caught in flight: headers and half a body written, the rest after the signal.
	slow := make([]*slowSend, slowN)
	for i := range slow {
		t := tenants[i%len(tenants)]
		s := send{t: t, key: fmt.Sprintf("shutdown-slow-%s-%d", r.id, i), n: 3, body: sendBody(900_000+i*10, 3, "Drill: caught in flight")}
		if slow[i], err = startSlowSend(ctx, n.base, s); err != nil {
			return fmt.Errorf("start a slow send: %w", err)
		}
	}
	// And connections that are open but have sent nothing (a client's spare connection, a port
	// probe): they hold no request, so they must not hold up the stop.
	for range 2 {
		c, err := dialRaw(ctx, n.base)
		if err != nil {
			return fmt.Errorf("open a silent connection: %w", err)
		}
		defer c.close()
	}
	time.Sleep(200 * time.Millisecond) // the node has read the slow sends' headers: they are its requests now
	// And a few large sends the node is working on when the signal comes.
	var bigs sync.WaitGroup
	for i := range 4 {
		bigs.Go(func() {
			ld.do(ctx, send{t: tenants[i%len(tenants)], key: fmt.Sprintf("shutdown-big-%s-%d", r.id, i), n: 1000,
				body: sendBody(800_000+i*1000, 1000, "Drill: a large send under way")})
		})
	}
	time.Sleep(5 * time.Millisecond)
	rec.logf("SIGTERM with %s messages accepted", count(ld.accepted.Load()))

	type exit struct {
		code int
		took time.Duration
		err  error
	}
	exited := make(chan exit, 1)
	signalAt.Store(time.Now().UnixNano())
	go func() {
		code, took, err := n.term(shutdownTimeout + 20*time.Second)
		exited <- exit{code, took, err}
	}()
	intake := probeIntake(ctx, n.base, n.exited, time.Unix(0, signalAt.Load()))
	time.Sleep(300 * time.Millisecond) // well into the shutdown
	var slowOK int
	var slowNote string
	for _, s := range slow {
		s.finish(shutdownTimeout + 5*time.Second)
		if s.reply.status >= 200 && s.reply.status < 300 {
			slowOK++
		} else if slowNote == "" {
			slowNote = describe(preq{label: "request in flight at SIGTERM", method: "POST", path: "/sms/send"}, s.reply, "2xx")
		}
	}
	ex := <-exited
	in := <-intake
	flightOK, flightAll, flightNote := flight.result()
	rec.value("in-flight requests answered", float64(slowN+flightAll-slowOK-flightOK), "requests",
		slowOK == slowN && flightOK == flightAll,
		fmt.Sprintf("%d of %d requests half-written at SIGTERM and %d of %d load requests in flight answered 2xx/4xx", slowOK, slowN, flightOK, flightAll),
		"all", firstOf(slowNote, flightNote))
	intakeRow(rec, in)
	rec.value("exit", ex.took.Seconds(), "s", ex.err == nil && ex.code == 0 && ex.took <= shutdownTimeout,
		fmt.Sprintf("exit code %d, %s after SIGTERM", ex.code, secs(ex.took)), fmt.Sprintf("0 within %s", shutdownTimeout),
		firstOf(errText(ex.err), "an unclean exit (see shutdown.log)"))
	if err := drainedRows(ctx, n, rec); err != nil {
		return err
	}

	// Started again: it serves at once and resumes what the stop left.
	st, err := n.start(ctx)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	rec.value("restart → /readyz", st.readyz.Seconds(), "s", st.readyz <= 2*time.Second,
		fmt.Sprintf("/healthz %s, /readyz %s after the start", secs(st.healthz), secs(st.readyz)), "≤ 2 s", "")
	// The slow sends that got no answer are retried with their keys, as a client would.
	var outcomes []outcome
	for _, s := range slow {
		if o, answered := s.outcome(ctx, ld); answered {
			outcomes = append(outcomes, o) // a retry is among the load's outcomes already
		}
	}
	time.Sleep(time.Second) // new sends on the restarted node too
	stop.Store(true)
	<-loadDone
	bigs.Wait()
	outcomes = append(outcomes, ld.results()...)
	rec.info("answers", float64(ld.attempts.Load()), "attempts", fmt.Sprintf("%s messages accepted in %d sends: %s",
		count(ld.accepted.Load()), len(outcomes), ld.codeList()))
	err = r.checkInvariants(ctx, n, rec, &keyCheck{outcomes: outcomes}, defaultSettling())
	if m, serr := n.c.scrape(ctx); serr == nil {
		rec.info("resumed", m.sum(mResumedMessage), "messages", fmt.Sprintf("%.0f messages resumed by the restarted node", m.sum(mResumedMessage)))
	}
	return err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// inFlight sorts the load's attempts that were under way when the signal came: each must
// have had an HTTP answer, not a dropped connection.
type inFlight struct {
	mu      sync.Mutex
	ok, all int
	example string
}

func (f *inFlight) note(r reply, signal int64) {
	if signal == 0 {
		return
	}
	begun := time.Now().Add(-r.took).UnixNano()
	f.mu.Lock()
	defer f.mu.Unlock()
	if begun >= signal {
		return // not in flight at the signal: intake is probed on its own
	}
	if r.refused() {
		// Never reached the node: an idle keep-alive connection it closed, which net/http
		// retried on a new one, refused. Not a request the node had.
		return
	}
	f.all++
	if r.err == nil && r.status > 0 && r.status < 500 {
		f.ok++
	} else if f.example == "" {
		f.example = describe(preq{label: "load request in flight at SIGTERM", method: "POST", path: "/sms/send"}, r, "an answer")
	}
}

func (f *inFlight) result() (ok, all int, example string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ok, f.all, f.example
}

// slowSend is a POST /sms/send written in two halves on its own connection.
type slowSend struct {
	s     send
	c     *rawConn
	rest  []byte
	reply reply
	start time.Time
}

func startSlowSend(ctx context.Context, base string, s send) (*slowSend, error) {
	c, err := dialRaw(ctx, base)
	if err != nil {
		return nil, err
	}
	head := rawHead("POST", "/sms/send", "Content-Type", "application/json", "Content-Length", strconv.Itoa(len(s.body)),
		"X-API-Key", s.t.key, "Idempotency-Key", s.key)
	half := len(s.body) / 2
	ss := &slowSend{s: s, c: c, rest: s.body[half:], start: time.Now()}
	if err := c.write(append(head, s.body[:half]...)); err != nil {
		c.close()
		return nil, err
	}
	return ss, nil
}

// finish writes the rest of the body and reads the answer.
func (ss *slowSend) finish(limit time.Duration) {
	defer ss.c.close()
	if err := ss.c.write(ss.rest); err != nil {
		ss.reply = reply{err: fmt.Errorf("write the rest of the body: %w", err), written: false}
		return
	}
	ss.reply = ss.c.response("POST", limit)
}

// outcome is what the client finally knows of the send: its answer (answered), or, when it
// had none, the answer to a retry with the same key on the restarted node, which the load
// records among its own.
func (ss *slowSend) outcome(ctx context.Context, ld *load) (outcome, bool) {
	r := ss.reply
	if r.status >= 200 && r.status < 300 {
		o := outcome{send: ss.s, status: r.status, attempts: 1, lastStart: ss.start, at: time.Now()}
		var body struct {
			JobID           string      `json:"job_id"`
			RecipientsCount int         `json:"recipients_count"`
			CostKES         json.Number `json:"cost_kes"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			o.err = err.Error()
		}
		o.jobID, o.count, o.cents = body.JobID, body.RecipientsCount, cents(body.CostKES)
		ld.accepted.Add(int64(o.count))
		return o, true
	}
	return ld.do(ctx, ss.s), false
}

// intakeResult is what new connections met after the signal.
type intakeResult struct {
	stopped              time.Duration // from the signal to the first connection not served; -1 if none
	refused, unavailable int
	dropped              int // connected, then closed without an answer: never the node's request
	served               int // answered other than 503 before intake stopped
	servedAfter          int // … after a connection had not been
	example              string
}

// probeIntake opens a new connection every 20 ms from the signal until the process has
// exited, asking for /healthz on each.
func probeIntake(ctx context.Context, base string, exited <-chan struct{}, signal time.Time) <-chan intakeResult {
	ch := make(chan intakeResult, 1)
	go func() {
		hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil,
			DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}}
		res := intakeResult{stopped: -1}
		for {
			at := time.Since(signal)
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/healthz", nil)
			resp, err := hc.Do(req)
			served := false
			switch {
			case err != nil && errors.Is(err, syscall.ECONNREFUSED):
				res.refused++
			case err != nil:
				res.dropped++
			case resp.StatusCode == http.StatusServiceUnavailable:
				res.unavailable++
			default:
				served = true
				res.served++
				if res.stopped >= 0 {
					res.servedAfter++
					res.example = fmt.Sprintf("a new connection %s after SIGTERM was answered %d", secs(at), resp.StatusCode)
				}
			}
			if resp != nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if !served && res.stopped < 0 {
				res.stopped = at
			}
			select {
			case <-exited:
				ch <- res
				return
			case <-ctx.Done():
				ch <- res
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return ch
}

// intakeRow records whether intake stopped at the signal.
func intakeRow(rec *recorder, in intakeResult) {
	ok := in.stopped >= 0 && in.stopped <= time.Second && in.servedAfter == 0
	figure := fmt.Sprintf("new connections after SIGTERM: %d refused, %d dropped unanswered, %d answered 503, %d served",
		in.refused, in.dropped, in.unavailable, in.served)
	if in.stopped >= 0 {
		figure += fmt.Sprintf("; none served from %s on", secs(in.stopped))
	}
	rec.value("intake stopped", max(in.stopped, 0).Seconds(), "s", ok, figure, "within 1 s of SIGTERM, none served after",
		firstOf(in.example, "new connections were still served"))
}

// drainedRows reads the database of the stopped node: a drained engine folded its progress
// log, so job counters equal recounts before anything starts again; what is left queued or
// sent is for the restart.
func drainedRows(ctx context.Context, n *node, rec *recorder) error {
	db, err := n.db(ctx)
	if err != nil {
		return fmt.Errorf("open the node's database: %w", err)
	}
	defer db.Close(context.WithoutCancel(ctx))
	var logged, marks, off, open, queued, sent int64
	err = db.QueryRow(ctx, `SELECT (SELECT count(*) FROM progress_log), (SELECT count(*) FROM submit_marks),
		(SELECT count(*) FROM jobs j LEFT JOIN (SELECT job_id, count(*) FILTER (WHERE status = 'delivered') d,
			count(*) FILTER (WHERE status = 'failed') f FROM messages GROUP BY job_id) m ON m.job_id = j.id
		 WHERE (j.delivered_count <> coalesce(m.d, 0) OR j.failed_count <> coalesce(m.f, 0))
			AND NOT (j.recipients_count = 1 AND j.campaign_id IS NULL)),
		(SELECT count(*) FROM open_jobs), (SELECT count(*) FROM messages WHERE status = 'queued'),
		(SELECT count(*) FROM messages WHERE status = 'sent')`).Scan(&logged, &marks, &off, &open, &queued, &sent)
	if err != nil {
		return fmt.Errorf("read the stopped node's database: %w", err)
	}
	rec.value("drained", float64(logged+off), "entries", logged == 0 && off == 0,
		fmt.Sprintf("at exit: %d progress-log entries unfolded, %d jobs whose counters ≠ a recount", logged, off),
		"0 and 0", "the engine was not drained: its progress log was left for the next start")
	rec.info("left for the restart", float64(queued+sent), "messages",
		fmt.Sprintf("%s queued and %s sent messages in %s open jobs; %d submit marks", count(queued), count(sent), count(open), marks))
	return nil
}
