package actors_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func TestSendDeliversAndBillsExactly(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	acct := w.account(1000_00)
	rs := recipients(300, carriers.NetworkUnknown, 1) // above the inline limit: compact job, expanded later
	text := "Hello from Tuma"                         // "Acme: " prefix keeps it one GSM-7 part
	res, err := w.send(acct, rs, text)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recipients != 300 || res.CostCents != 300*50 {
		t.Fatalf("send = %+v; want 300 recipients costing 300 × 0.50 KES", res)
	}
	c := w.waitFinal(acct, 300, 30*time.Second)
	if c.Delivered != 300 {
		t.Errorf("counts %+v; want all 300 delivered (default outcome mix)", c)
	}
	if got := w.balance(acct); got != 1000_00-300*50 {
		t.Errorf("balance %d; want %d", got, 1000_00-300*50)
	}
	if n := w.sqlInt(`SELECT count(*) FROM messages WHERE job_id = $1 AND status = 'delivered' AND provider_message_id IS NOT NULL`, res.JobID); n != 300 {
		t.Errorf("%d delivered message rows with provider ids; want 300", n)
	}
	if n := w.sqlInt(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'completed' AND delivered_count = 300 AND sent_count = 0`, res.JobID); n != 1 {
		t.Error("job not completed with delivered_count 300")
	}
}

func TestConcurrentSendsNeverOverdraw(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	acct := w.account(37 * 50) // exactly 37 one-part SMS at the Starter price
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		accepted, refused int
	)
	for i := range 200 {
		wg.Go(func() {
			_, err := w.send(acct, recipients(1, carriers.Safaricom, uint64(i)), "Hi")
			mu.Lock()
			defer mu.Unlock()
			var ib *actors.InsufficientBalanceError
			switch {
			case err == nil:
				accepted++
			case errors.As(err, &ib):
				refused++
			default:
				t.Errorf("send: %v", err)
			}
		})
	}
	wg.Wait()
	if accepted != 37 || refused != 163 {
		t.Fatalf("accepted %d, refused %d; want 37 and 163", accepted, refused)
	}
	if b := w.balance(acct); b != 0 {
		t.Fatalf("balance %d cents; want exactly 0", b)
	}
	if n := w.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, acct); n != 37 {
		t.Errorf("%d jobs recorded; want 37", n)
	}
}

func TestInsufficientBalanceChangesNothing(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	acct := w.account(99) // 0.99 KES: two SMS cost 1.00
	_, err := w.send(acct, recipients(2, carriers.Safaricom, 7), "Hi")
	var ib *actors.InsufficientBalanceError
	if !errors.As(err, &ib) || ib.AvailableCents != 99 || ib.CostCents != 100 {
		t.Fatalf("send error = %v; want insufficient balance (99 available, 100 needed)", err)
	}
	if b := w.balance(acct); b != 99 {
		t.Errorf("balance %d; want 99 untouched", b)
	}
	if n := w.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, acct) + w.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1`, acct); n != 0 {
		t.Errorf("%d jobs or messages written; want none", n)
	}
}

func TestFailedMessagesAreRefundedExactly(t *testing.T) {
	w := newWorld(t, actors.Options{}, func(n carriers.Network, o *sim.Options) {
		o.Undeliverable = 1 // every message fails at the receipt
		if n == carriers.Telkom {
			o.RejectRate = 1 // and Telkom rejects at submit
		}
	})
	acct := w.account(1000_00)
	long := make([]byte, 200) // 2 GSM-7 parts with the prefix
	for i := range long {
		long[i] = 'a'
	}
	res, err := w.send(acct, recipients(250, carriers.NetworkUnknown, 3), string(long))
	if err != nil {
		t.Fatal(err)
	}
	if res.CostCents != 250*2*50 {
		t.Fatalf("cost %d; want %d (2 parts each)", res.CostCents, 250*2*50)
	}
	c := w.waitFinal(acct, 250, 30*time.Second)
	if c.Failed != 250 {
		t.Fatalf("counts %+v; want every message failed", c)
	}
	if b := w.balance(acct); b != 1000_00 {
		t.Errorf("balance %d after refunds; want %d (everything back)", b, 1000_00)
	}
	debits := w.sqlInt(`SELECT coalesce(sum(amount_cents),0) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, acct)
	refunds := w.sqlInt(`SELECT coalesce(sum(amount_cents),0) FROM wallet_transactions WHERE account_id = $1 AND type = 'refund'`, acct)
	if debits != res.CostCents || refunds != res.CostCents {
		t.Errorf("ledger debits %d, refunds %d; want both %d", debits, refunds, res.CostCents)
	}
	if s := w.metric("tuma_messages_failed_total", map[string]string{"network": "telkom", "stage": "submit"}); s == 0 {
		t.Error("no submit-stage failures counted for Telkom")
	}
}

func TestBrokenNetworkOpensItsBreakerOnly(t *testing.T) {
	opts := actors.Options{Links: map[carriers.Network]actors.LinkOptions{}}
	for _, n := range carriers.Networks() {
		opts.Links[n] = actors.LinkOptions{BreakerTimeout: 300 * time.Millisecond, BreakerMinReqs: 5, MaxAttempts: 1000}
	}
	w := newWorld(t, opts, func(n carriers.Network, o *sim.Options) {
		if n == carriers.Airtel {
			o.FailureRate = 1
		}
	})
	acct := w.account(1000_00)
	rs := append(append(recipients(100, carriers.Safaricom, 1), recipients(100, carriers.Airtel, 2)...), recipients(100, carriers.Telkom, 3)...)
	if _, err := w.send(acct, rs, "Hello"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Safaricom and Telkom to deliver while Airtel is down", func() (bool, string) {
		d := w.metric("tuma_messages_delivered_total", map[string]string{"network": "safaricom"}) +
			w.metric("tuma_messages_delivered_total", map[string]string{"network": "telkom"})
		return d == 200, fmt.Sprintf("delivered %v", d)
	})
	if s := w.metric("tuma_link_breaker_state", map[string]string{"network": "airtel"}); s == 0 {
		t.Fatalf("airtel breaker state %v; want open or half-open", s)
	}
	for _, n := range []string{"safaricom", "telkom"} {
		if s := w.metric("tuma_link_breaker_state", map[string]string{"network": n}); s != 0 {
			t.Errorf("%s breaker state %v; want closed", n, s)
		}
	}
	eventually(t, 10*time.Second, "counts to show Airtel's 100 still queued, none failed", func() (bool, string) {
		c := w.counts(acct)
		return c.Failed == 0 && c.Queued == 100 && c.Delivered == 200, fmt.Sprintf("%+v", c)
	})
	// The network recovers: the breaker half-opens, probes succeed, the backlog drains.
	cfg := sim.Options{}
	if err := w.sims.Network(carriers.Airtel).Configure(cfg); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 300, 30*time.Second)
	if s := w.metric("tuma_link_breaker_state", map[string]string{"network": "airtel"}); s != 0 {
		t.Errorf("airtel breaker state %v after recovery; want closed", s)
	}
}

func TestThrottledSubmitsAreSlowedNotFailed(t *testing.T) {
	w := newWorld(t, actors.Options{}, func(n carriers.Network, o *sim.Options) {
		if n == carriers.Safaricom {
			o.TPS = 100 // we submit as fast as we can; the network pushes back
		}
	})
	acct := w.account(1000_00)
	start := time.Now()
	if _, err := w.send(acct, recipients(300, carriers.Safaricom, 5), "Hello"); err != nil {
		t.Fatal(err)
	}
	c := w.waitFinal(acct, 300, 30*time.Second)
	if c.Delivered != 300 {
		t.Fatalf("counts %+v; want all 300 delivered despite throttling", c)
	}
	if thr := w.metric("tuma_link_throttled_total", map[string]string{"network": "safaricom"}); thr == 0 {
		t.Error("no throttles counted; the test did not exercise back-off")
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("300 messages at 100/s took %v; want about 3s (the network's pace)", took)
	}
	if mr := w.sims.Network(carriers.Safaricom).Stats().MaxRate; mr > 100*1.15 {
		t.Errorf("network saw up to %.0f accepted submits/s; cap 100", mr)
	}
}

func TestLinkRestartKeepsItsWork(t *testing.T) {
	w := newWorld(t, actors.Options{}, func(n carriers.Network, o *sim.Options) {
		o.Latency = 2 * time.Millisecond
		o.TPS = 2000
	})
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(1000, carriers.Safaricom, 9), "Hello"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		actors.PanicLink(w.eng, carriers.Safaricom)
		actors.PanicReceipts(w.eng)
		time.Sleep(20 * time.Millisecond) // let some work run between the panics
	}
	c := w.waitFinal(acct, 1000, 60*time.Second)
	if c.Delivered != 1000 {
		t.Fatalf("counts %+v; want all delivered across restarts", c)
	}
	if r := w.metric("tuma_actor_restarts_total", map[string]string{"kind": "link"}); r != 3 {
		t.Errorf("link restarts counted %v; want 3", r)
	}
	if r := w.metric("tuma_actor_restarts_total", map[string]string{"kind": "receipts"}); r != 3 {
		t.Errorf("receipts restarts counted %v; want 3", r)
	}
}

func TestCrashMidDispatchResumesExactly(t *testing.T) {
	tune := func(n carriers.Network, o *sim.Options) {
		o.ReceiptDelay = 50 * time.Millisecond
		o.ReceiptJitter = 200 * time.Millisecond
		o.Delivered, o.Undeliverable = 9, 1
	}
	w := newWorld(t, actors.Options{}, tune)
	accts := []uuid.UUID{w.account(100_000_00), w.account(100_000_00)}
	const jobs, per = 10, 10_000
	var cost int64
	for i := range jobs {
		res, err := w.send(accts[i%2], recipients(per, carriers.NetworkUnknown, uint64(100+i)), "Crash test")
		if err != nil {
			t.Fatal(err)
		}
		cost += res.CostCents
	}
	eventually(t, 2*time.Minute, "dispatch to be well under way", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM messages WHERE status IN ('delivered', 'failed')`)
		return n >= 20_000, fmt.Sprint(n, " final")
	})
	w.eng.Kill()
	before := w.sqlInt(`SELECT count(*) FROM messages WHERE status IN ('queued', 'sent')`)
	if before == 0 {
		t.Fatal("everything finished before the crash; the test proves nothing")
	}

	// A new process: new simulators (their pending receipts died too), same database.
	w.sims = newSims(t, tune)
	w.start()
	eventually(t, 3*time.Minute, "every message to reach a final state after the restart", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM messages WHERE status IN ('queued', 'sent')`)
		return n == 0, fmt.Sprint(n, " open")
	})
	if n := w.sqlInt(`SELECT count(*) FROM messages`); n != jobs*per {
		t.Fatalf("%d message rows; want exactly %d", n, jobs*per)
	}
	eventually(t, 30*time.Second, "every job to be completed", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM jobs WHERE status <> 'completed'`) + w.sqlInt(`SELECT count(*) FROM open_jobs`)
		return n == 0, fmt.Sprint(n, " open")
	})
	// The counters agree with the messages exactly, though the old process died between writes.
	if n := w.sqlInt(`SELECT count(*) FROM jobs j WHERE delivered_count + failed_count <> recipients_count OR sent_count <> 0
		OR delivered_count <> (SELECT count(*) FROM messages m WHERE m.job_id = j.id AND m.status = 'delivered')
		OR refunded_cents <> (SELECT coalesce(sum(cost_cents), 0) FROM messages m WHERE m.job_id = j.id AND m.status = 'failed')`); n != 0 {
		t.Errorf("%d jobs' counters disagree with their messages", n)
	}
	notFailed := w.sqlInt(`SELECT coalesce(sum(cost_cents),0) FROM messages WHERE status = 'delivered'`)
	net := w.sqlInt(`SELECT coalesce(sum(CASE type WHEN 'debit' THEN amount_cents WHEN 'refund' THEN -amount_cents END),0)
		FROM wallet_transactions WHERE type IN ('debit','refund')`)
	if net != notFailed {
		t.Fatalf("debits − refunds = %d; want %d, the cost of the messages not failed", net, notFailed)
	}
	if spent := 2*100_000_00 - w.balance(accts[0]) - w.balance(accts[1]); spent != notFailed {
		t.Errorf("wallets lost %d; want %d", spent, notFailed)
	}
	t.Logf("crash left %d of %d messages open; all final after restart; charged %d of %d cents", before, jobs*per, notFailed, cost)
}

func TestLiveStatusSyncsWithoutPushedReceipts(t *testing.T) {
	st, u := pgtest.NewStore(t)
	w := &world{t: t, st: st, dbURL: u}
	w.sims = newSims(t, func(n carriers.Network, o *sim.Options) {
		o.ReceiptDelay = 100 * time.Millisecond
		o.Undeliverable = 1
	})
	// Start the engine without wiring pushed receipts: only live checks can finish messages.
	w.reg = prometheus.NewRegistry()
	eng, err := actors.Start(context.Background(), actors.Options{}, actors.Deps{Log: slog.New(slog.DiscardHandler),
		Registerer: w.reg, Store: st, Carriers: w.sims.Carriers()})
	if err != nil {
		t.Fatal(err)
	}
	w.eng = eng
	t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	acct := w.account(10_00)
	if _, err := w.send(acct, recipients(1, carriers.Airtel, 1), "Hi"); err != nil {
		t.Fatal(err)
	}
	var m persistence.Message
	eventually(t, 10*time.Second, "the message to be sent", func() (bool, string) {
		ms, _, err := st.ListMessages(context.Background(), acct, persistence.MessageFilter{}, persistence.Page{Number: 1, Size: 1})
		if err != nil || len(ms) == 0 {
			return false, fmt.Sprint(err)
		}
		m = ms[0]
		return m.Status == persistence.MessageSent, string(m.Status)
	})
	var live actors.CarrierStatus
	eventually(t, 10*time.Second, "the network to know the outcome", func() (bool, string) {
		live, err = eng.LiveStatus(context.Background(), carriers.Airtel, *m.ProviderMessageID)
		return err == nil && live.Final, fmt.Sprintf("%+v %v", live, err)
	})
	if err := eng.Sync(context.Background(), carriers.Airtel, *m.ProviderMessageID, live); err != nil {
		t.Fatal(err)
	}
	got, err := st.MessageByID(context.Background(), acct, m.ID)
	if err != nil || got.Status != "failed" || got.ProviderStatus != "UNDELIV" {
		t.Fatalf("after sync: %+v, %v; want failed/UNDELIV", got, err)
	}
	if b := w.balance(acct); b != 10_00 {
		t.Errorf("balance %d; want the failed message refunded (1000)", b)
	}
	if _, err := eng.LiveStatus(context.Background(), carriers.Airtel, "not-an-id"); !errors.Is(err, actors.ErrUnknownMessage) {
		t.Errorf("unknown id error = %v; want ErrUnknownMessage", err)
	}
}

// A job that has used its window waits for its outcomes, and once its link has nothing else
// to do they are written at once, not when a receipts flush would have filled (here never: an
// hour and 100,000 events). Only the last window, which nothing waits on, may stay buffered.
func TestAJobWaitingForItsWindowGetsItsOutcomesAtOnce(t *testing.T) {
	const window = 10
	w := newWorld(t, actors.Options{JobWindow: window, ReceiptsInterval: time.Hour, ReceiptsBatch: 100_000}, nil)
	acct := w.account(1000_00)
	rs := recipients(6*window, carriers.Safaricom, 7)
	if _, err := w.send(acct, rs, "window"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "every submission but the last window's to be recorded", func() (bool, string) {
		c := w.counts(acct)
		return c.Queued <= window, fmt.Sprintf("%+v", c)
	})
}
