package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// hooksDrill: one account subscribed to its messages' events at a receiver of the drill's that
// answers 503 (Retry-After: 1) at first, so every event waits in the outbox. The node is
// killed with SIGKILL while all of them are pending, started again, the receiver opens, and
// the node is killed again while the events pour in. Afterwards the receiver, de-duplicating
// by event id, must hold every event exactly once (two per message: sent, then delivered),
// none out of order.
func hooksDrill(ctx context.Context, r *runner, rec *recorder) error {
	messages := r.sizes.HookMessages
	rcv, err := startDrillReceiver()
	if err != nil {
		return err
	}
	defer rcv.stop()
	n, err := r.node("hooks", map[string]string{
		"TUMA_WEBHOOK_ALLOW_PRIVATE": "true",
		"TUMA_SIM_OUTCOMES":          "delivered=100", // every message has exactly two events
	})
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	ts, err := r.tenants(ctx, n.c, "hooks", 1, max(1000, messages))
	if err != nil {
		return err
	}
	t := ts[0]
	created := n.c.do(ctx, "POST", "/webhooks", map[string]any{"url": rcv.url, "batch_size": 100,
		"events": []string{"message.sent", "message.delivered", "message.failed"}}, t.apiKey()...)
	if err := created.expect(201); err != nil {
		return fmt.Errorf("create the endpoint: %w", err)
	}

	const perSend = 1000
	var sends []send
	for i := 0; i*perSend < messages; i++ {
		sends = append(sends, send{t: t, key: fmt.Sprintf("hooks-%s-%d", r.id, i), n: perSend,
			body: sendBody(i*perSend, perSend, "Drill: your order has shipped")})
	}
	ld := newLoad(n.c, 5*time.Minute)
	ld.run(ctx, 4, plan(sends))
	accepted := ld.accepted.Load()
	db, err := n.db(ctx)
	if err != nil {
		return err
	}
	took, left, err := settle(ctx, db, defaultSettling())
	db.Close(ctx)
	if err != nil {
		return fmt.Errorf("messages not final after %s (%+v): %w", secs(took), left, err)
	}
	want := 2 * accepted
	got := rcv.unique()
	rec.check("events pending at the kill", got == 0 && accepted >= int64(messages),
		fmt.Sprintf("%s events of %s messages, none received (the receiver answers 503)", count(want), count(accepted)),
		fmt.Sprintf("%s pending", count(2*int64(messages))), "")

	var restarts []startTimes
	if err := n.kill(); err != nil {
		return err
	}
	st, err := n.start(ctx)
	if err != nil {
		return fmt.Errorf("restart 1: %w", err)
	}
	restarts = append(restarts, st)
	rcv.open.Store(true)
	// The second kill lands while deliveries are under way.
	killAt := want / 3
	deadline := time.Now().Add(2 * time.Minute)
	for rcv.unique() < killAt && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	midway := rcv.unique()
	if err := n.kill(); err != nil {
		return err
	}
	if st, err = n.start(ctx); err != nil {
		return fmt.Errorf("restart 2: %w", err)
	}
	restarts = append(restarts, st)
	rec.info("second kill", float64(midway), "events", fmt.Sprintf("after %s of %s events arrived", count(midway), count(want)))
	restartRows(rec, restarts, 2)

	start := time.Now()
	deadline = start.Add(3 * time.Minute)
	for rcv.unique() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	s := rcv.summary()
	rec.value("events delivered", float64(s.unique), "events", s.unique == want,
		fmt.Sprintf("%s distinct events of %s, %s after the last restart", count(s.unique), count(want), secs(time.Since(start))),
		"every one", "events lost across the kills")
	rec.check("two per message", s.complete == accepted && s.messages == accepted,
		fmt.Sprintf("%s of %s messages have their message.sent and message.delivered", count(s.complete), count(accepted)),
		"every message", "a message is missing an event")
	rec.check("order per message", s.outOfOrder == 0,
		fmt.Sprintf("%d final events before their message.sent", s.outOfOrder), "0", "")
	rec.info("duplicates", float64(s.duplicates), "events",
		fmt.Sprintf("%s events received again (at least once allows them; the receiver drops them by id)", count(s.duplicates)))
	return nil
}

// drillReceiver is the tenant's system: 503 until open, then 204, recording each event once.
type drillReceiver struct {
	url  string
	ln   net.Listener
	srv  *http.Server
	done chan error
	open atomic.Bool

	mu   sync.Mutex
	seen map[string]bool  // event ids
	msgs map[string]uint8 // message id → 1 sent, 2 delivered
	ord  int64            // delivered before sent
	dups int64
}

type receiverSummary struct {
	unique, duplicates, messages, complete, outOfOrder int64
}

func startDrillReceiver() (*drillReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &drillReceiver{url: "http://" + ln.Addr().String() + "/hook", ln: ln, done: make(chan error, 1),
		seen: map[string]bool{}, msgs: map[string]uint8{}}
	d.srv = &http.Server{Handler: http.HandlerFunc(d.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { d.done <- d.srv.Serve(ln) }()
	return d, nil
}

func (d *drillReceiver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
	<-d.done // http.ErrServerClosed, or why it stopped early: the drill's rows say what arrived
}

func (d *drillReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if !d.open.Load() {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var b struct {
		Events []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				MessageID string `json:"message_id"`
			} `json:"data"`
		} `json:"events"`
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 32<<20))
	if err != nil || json.Unmarshal(body, &b) != nil || len(b.Events) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	for _, e := range b.Events {
		if d.seen[e.ID] {
			d.dups++
			continue
		}
		d.seen[e.ID] = true
		switch e.Type {
		case "message.sent":
			d.msgs[e.Data.MessageID] |= 1
		case "message.delivered", "message.failed":
			if d.msgs[e.Data.MessageID]&1 == 0 {
				d.ord++
			}
			d.msgs[e.Data.MessageID] |= 2
		}
	}
	d.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (d *drillReceiver) unique() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(len(d.seen))
}

func (d *drillReceiver) summary() receiverSummary {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := receiverSummary{unique: int64(len(d.seen)), duplicates: d.dups, messages: int64(len(d.msgs)), outOfOrder: d.ord}
	for _, m := range d.msgs {
		if m == 3 {
			s.complete++
		}
	}
	return s
}
