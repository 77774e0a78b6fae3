package drill

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// probe is a tenant sending one message at a time while a node starts and drains another
// tenant's backlog: how soon the start takes its first send, and how long each waits for
// the links.
type probe struct {
	first  chan time.Duration // from the process start to the first 202 (0 if none came)
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	jobs   []string
	last   string // the last refusal, for the report
	ticker time.Duration
}

// startProbe begins at once: 1-recipient sends every few milliseconds until the first 202,
// then one every 250 ms until stop.
func startProbe(ctx context.Context, n *node, t *tenant, runID string) *probe {
	ctx, cancel := context.WithCancel(ctx)
	p := &probe{first: make(chan time.Duration, 1), cancel: cancel, done: make(chan struct{}), ticker: 250 * time.Millisecond}
	started := n.lastStart()
	go func() {
		defer close(p.done)
		firstSent := false
		defer func() {
			if !firstSent {
				p.first <- 0
			}
		}()
		for i := 0; ctx.Err() == nil; i++ {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			rep := n.c.do(rctx, "POST", "/sms/send", sendBody(900_000+i, 1, "Drill: probe"),
				append(t.apiKey(), "Idempotency-Key", fmt.Sprintf("probe-%s-%d", runID, i))...)
			rcancel()
			wait := 5 * time.Millisecond
			if rep.status == 202 {
				var body struct {
					JobID string `json:"job_id"`
				}
				if err := rep.decode(&body); err == nil {
					p.mu.Lock()
					p.jobs = append(p.jobs, body.JobID)
					p.mu.Unlock()
				}
				if !firstSent {
					firstSent = true
					p.first <- time.Since(started)
				}
				wait = p.ticker
			} else {
				p.mu.Lock()
				p.last = fmt.Sprintf("%d %v %s", rep.status, rep.err, clip(rep.body, 120))
				p.mu.Unlock()
				if firstSent {
					wait = p.ticker
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}()
	return p
}

// stop ends the sends and waits for the last.
func (p *probe) stop() {
	p.cancel()
	<-p.done
}

func (p *probe) err() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == "" {
		return ""
	}
	return "last refusal: " + p.last
}

// delays waits (up to a minute) until every probe message was submitted and returns, for each,
// the time from its acceptance to its submit.
func (p *probe) delays(ctx context.Context, db *pgx.Conn) ([]time.Duration, error) {
	p.mu.Lock()
	jobs := append([]string(nil), p.jobs...)
	p.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting int
		var secs []float64
		err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE sent_at IS NULL AND status <> 'failed'),
			coalesce(array_agg(extract(epoch FROM sent_at - created_at)::float8) FILTER (WHERE sent_at IS NOT NULL), '{}')
			FROM messages WHERE job_id = ANY($1::uuid[])`, jobs).Scan(&waiting, &secs)
		if err != nil {
			return nil, fmt.Errorf("read the probe's messages: %w", err)
		}
		if waiting == 0 || time.Now().After(deadline) {
			out := make([]time.Duration, len(secs))
			for i, s := range secs {
				out[i] = time.Duration(s * float64(time.Second))
			}
			if waiting > 0 {
				return out, fmt.Errorf("%d probe messages still not submitted a minute after the drain", waiting)
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
