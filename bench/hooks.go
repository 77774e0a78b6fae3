// --webhooks: a run with every account subscribed to message.sent and message.delivered,
// each endpoint pointing at the tool's own receiver (hookreceiver.go).

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// hookEvents are the event types the run subscribes to.
var hookEvents = []string{"message.sent", "message.delivered"}

// hookPoll is how often the receiver is read while waiting for the last events.
const hookPoll = 100 * time.Millisecond

// Webhooks is the result of a run with --webhooks.
type Webhooks struct {
	BatchSize  int        `json:"batch_size"`
	Endpoints  int        `json:"endpoints"`
	Counts     hookCounts `json:"counts"`
	Delivered  int64      `json:"delivered_messages"` // messages the accounts' statistics say were delivered
	Lost       int64      `json:"lost_events"`        // delivered messages missing their message.delivered or message.sent
	Complete   bool       `json:"complete"`           // every event arrived before --timeout
	Latency    Latency    `json:"latency"`            // event created_at → first arrival
	EventsPerS float64    `json:"events_per_s"`       // unique events over first to last arrival
	LastAfterS float64    `json:"last_after_drain_s"` // the last event's arrival after the messages were final
}

// expectedEvents is about how many events a run at a fixed rate sends its receiver (0:
// unknown, each client sending as fast as answered).
func (c Config) expectedEvents() int {
	return int(c.Rate*c.Duration.Seconds()) * c.Recipients * len(hookEvents)
}

// subscribe creates one endpoint per account, all at the receiver.
func subscribe(ctx context.Context, a *api, cfg Config, rcv *hookReceiver, tenants []*tenant) error {
	for i, t := range tenants {
		body, err := json.Marshal(map[string]any{
			"url": rcv.url(cfg.WebhookHost, i), "events": hookEvents, "batch_size": cfg.WebhookBatch,
			"description": "tuma-lab bench receiver",
		})
		if err != nil {
			return err
		}
		c := a.do(ctx, "POST", "/webhooks", body, "X-API-Key", t.key)
		if err := c.expect(201); err != nil {
			return fmt.Errorf("create a webhook endpoint (does the server run with TUMA_WEBHOOK_ALLOW_PRIVATE=true?): %w", err)
		}
		var ep struct {
			Secret string `json:"secret"`
		}
		if err := json.Unmarshal(c.body, &ep); err != nil {
			return fmt.Errorf("create a webhook endpoint: %w", err)
		}
		if err := rcv.setSecret(i, ep.Secret); err != nil {
			return err
		}
	}
	return nil
}

// awaitHooks waits until every delivered message's two events have arrived, or deadline.
func awaitHooks(ctx context.Context, rcv *hookReceiver, cfg Config, tenants int, dr drainResult, deadline time.Time) Webhooks {
	w := Webhooks{BatchSize: cfg.WebhookBatch, Endpoints: tenants, Delivered: dr.stats.Delivered}
	tick := time.NewTicker(hookPoll)
	defer tick.Stop()
wait:
	for {
		_, delivered, orphans := rcv.tally()
		w.Lost = max(0, dr.stats.Delivered-delivered) + orphans
		if w.Lost == 0 && dr.drained {
			w.Complete = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			break wait
		case <-tick.C:
		}
	}
	w.Counts = rcv.counts()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	w.Latency = summarise(slices.Clone(rcv.lat))
	if span := rcv.last.Sub(rcv.first).Seconds(); span > 0 {
		w.EventsPerS = float64(rcv.stats.Unique) / span
	}
	if dr.drained && !rcv.last.IsZero() {
		w.LastAfterS = rcv.last.Sub(dr.at).Seconds()
	}
	return w
}

// problems are the webhook checks that failed.
func (w *Webhooks) problems() []string {
	var p []string
	if w.Lost > 0 {
		p = append(p, fmt.Sprintf("webhooks: %d events of delivered messages had not arrived by --timeout", w.Lost))
	}
	if w.Counts.BadSignatures > 0 {
		p = append(p, fmt.Sprintf("webhooks: %d deliveries failed signature verification", w.Counts.BadSignatures))
	}
	if w.Counts.BadBodies > 0 {
		p = append(p, fmt.Sprintf("webhooks: %d deliveries had unreadable bodies", w.Counts.BadBodies))
	}
	if w.Counts.OutOfOrder > 0 {
		p = append(p, fmt.Sprintf("webhooks: %d messages' final event arrived before their message.sent", w.Counts.OutOfOrder))
	}
	return p
}

// print writes the webhook table.
func (w *Webhooks) print(out io.Writer) {
	fmt.Fprintf(out, "\nwebhooks · %d endpoints · batch_size %d · events %v\n", w.Endpoints, w.BatchSize, hookEvents)
	fmt.Fprintf(out, "  received      %d events in %d deliveries (%d unique, %d duplicates)\n",
		w.Counts.Events, w.Counts.Deliveries, w.Counts.Unique, w.Counts.Duplicates)
	fmt.Fprintf(out, "  rate          %s events/s (first to last arrival)\n", rate(w.EventsPerS))
	fmt.Fprintf(out, "  latency       p50 %s · p99 %s · max %s (event created → received)\n",
		msStr(w.Latency.P50MS), msStr(w.Latency.P99MS), msStr(w.Latency.MaxMS))
	fmt.Fprintf(out, "  complete      %v (lost %d; last event %.1f s after the messages were final)\n", w.Complete, w.Lost, w.LastAfterS)
	fmt.Fprintf(out, "  checks        %d bad signatures · %d out of order · %d bad bodies · %d requests cut short\n",
		w.Counts.BadSignatures, w.Counts.OutOfOrder, w.Counts.BadBodies, w.Counts.Broken)
}
