package actors_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
	"github.com/tuma-sms/tuma/persistence"
)

// noLookup hides a carrier's Lookup: a network that cannot say whether it took a message
// (plain SMPP).
type noLookup struct{ actors.Carrier }

func withoutLookup(cs map[carriers.Network]actors.Carrier) map[carriers.Network]actors.Carrier {
	out := map[carriers.Network]actors.Carrier{}
	for n, c := range cs {
		out[n] = noLookup{c}
	}
	return out
}

// accepted is how many submits the simulated networks accepted.
func (w *world) accepted() uint64 {
	var n uint64
	for _, net := range carriers.Networks() {
		n += w.sims.Network(net).Stats().Accepted
	}
	return n
}

// waitAllFinal waits until there are total messages, every one delivered or failed.
func (w *world) waitAllFinal(total int64, d time.Duration) {
	w.t.Helper()
	defer w.dumpOnFailure()
	eventually(w.t, d, "every message to reach a final state", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM messages WHERE status IN ('delivered', 'failed')`)
		return n == total, fmt.Sprint(n, " of ", total, " final")
	})
}

// crashMidSubmit sends total messages over slow networks and kills the engine while submits
// are in flight and their outcomes not yet written (receipts flush rarely). It returns how
// many messages were still queued in the database at the crash.
func crashMidSubmit(t *testing.T, w *world, acct uuid.UUID, total int) int64 {
	t.Helper()
	if _, err := w.send(acct, recipients(total, carriers.NetworkUnknown, 77), "crash"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "submits to be under way", func() (bool, string) {
		a := w.accepted()
		return a >= uint64(total)/4, fmt.Sprint(a, " accepted")
	})
	w.eng.Kill()
	queued := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'queued'`)
	if queued == 0 || w.accepted() == 0 {
		t.Fatal("nothing was in flight at the crash; the test proves nothing")
	}
	return queued
}

// slowFlush: submits take 2 ms and outcomes are written every 300 ms, so a crash catches
// many messages accepted by their network whose outcome is not yet durable.
var slowFlush = actors.Options{ReceiptsInterval: 300 * time.Millisecond, ReceiptsBatch: 100_000}

func slowNetworks(_ carriers.Network, o *sim.Options) {
	o.Latency = 2 * time.Millisecond
	o.ReceiptDelay = 50 * time.Millisecond
}

// A crash between a submit and the write of its outcome must not send the message twice: the
// link marked it before submitting, and recovery asks the network (which keeps running while
// we crash) instead of resending.
func TestCrashDoesNotResubmitWhatTheNetworkTook(t *testing.T) {
	w := newWorld(t, slowFlush, slowNetworks)
	acct := w.account(1000_00)
	const total = 1500
	queued := crashMidSubmit(t, w, acct, total)
	w.opts = actors.Options{}
	w.start()
	w.waitAllFinal(total, time.Minute)
	if got := w.accepted(); got != total {
		t.Fatalf("the networks accepted %d submits for %d messages; want each exactly once", got, total)
	}
	if n := w.metric("tuma_link_resent_after_crash_total", nil); n != 0 {
		t.Errorf("%v messages counted as resent; want 0 (the networks could say)", n)
	}
	found := w.metric("tuma_link_unsettled_checked_total", map[string]string{"outcome": "found"})
	t.Logf("%d messages queued at the crash; %v of them found at their network, not sent again", queued, found)
}

// Without a way to ask, a possibly-sent message is sent again, counted, and bounded by what
// the links had in flight at the crash.
func TestCrashResendsWithoutLookupAreCountedAndBounded(t *testing.T) {
	w := newWorldWith(t, slowFlush, slowNetworks, func(w *world) { w.wrap = withoutLookup })
	acct := w.account(1000_00)
	const total = 1500
	crashMidSubmit(t, w, acct, total)
	w.opts = actors.Options{}
	w.start()
	w.waitAllFinal(total, time.Minute)
	extra := float64(w.accepted()) - total
	resent := 0.0
	for _, n := range carriers.Networks() {
		resent += w.metric("tuma_link_resent_after_crash_total", map[string]string{"network": n.String()})
	}
	if resent <= 0 || extra > resent {
		t.Fatalf("%v duplicate submits, %v counted as resent; want every duplicate counted", extra, resent)
	}
	// What can be lost in a crash is what is outstanding: submitted, outcome not yet durable,
	// at most JobWindow per job and network.
	if window := float64(3 * 256); resent > window {
		t.Errorf("%v resent; want at most the outstanding window (%v)", resent, window)
	}
}

// A submit whose answer is lost is looked up, not refunded; without a lookup it is recorded
// sent, not refunded, until the sweep's deadline fails it, refunding it exactly once.
func TestLostAnswersAreSettledNotRefundedAtOnce(t *testing.T) {
	lossy := func(_ carriers.Network, o *sim.Options) { o.LostAnswerRate = 0.3 }
	t.Run("looked up", func(t *testing.T) {
		w := newWorld(t, actors.Options{}, lossy)
		acct := w.account(100_00)
		if _, err := w.send(acct, recipients(200, carriers.NetworkUnknown, 5), "lost"); err != nil {
			t.Fatal(err)
		}
		c := w.waitFinal(acct, 200, 30*time.Second)
		if c.Delivered != 200 || w.accepted() != 200 || w.balance(acct) != 100_00-200*50 {
			t.Fatalf("counts %+v, %d accepted, balance %d; want 200 delivered once, charged in full", c, w.accepted(), w.balance(acct))
		}
	})
	t.Run("unknown", func(t *testing.T) {
		opts := actors.Options{ReceiptTimeout: 20 * time.Millisecond, ReceiptDeadline: 2 * time.Second, SweepInterval: 50 * time.Millisecond}
		all := func(n carriers.Network, o *sim.Options) { o.LostAnswerRate = 1; o.ReceiptDelay = time.Hour }
		w := newWorldWith(t, opts, all, func(w *world) { w.wrap = withoutLookup })
		acct := w.account(100_00)
		if _, err := w.send(acct, recipients(50, carriers.NetworkUnknown, 6), "lost"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the messages to be sent with an unknown outcome", func() (bool, string) {
			n := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'sent' AND provider_status = 'UNKNOWN' AND provider_message_id IS NULL`)
			return n == 50, fmt.Sprint(n)
		})
		if b := w.balance(acct); b != 100_00-50*50 {
			t.Fatalf("balance %d before the deadline; want nothing refunded yet", b)
		}
		w.waitFinal(acct, 50, 20*time.Second)
		if b, refunds := w.balance(acct), w.sqlInt(`SELECT coalesce(sum(amount_cents),0) FROM wallet_transactions WHERE type = 'refund'`); b != 100_00 || refunds != 50*50 {
			t.Fatalf("balance %d, refunds %d after the deadline; want every message refunded exactly once", b, refunds)
		}
	})
}

// The sweep walks every message without a receipt, beyond any one round's page, and fails and
// refunds each exactly once at the deadline.
func TestStaleSweepExpiresEveryMessageOnce(t *testing.T) {
	opts := actors.Options{ReceiptTimeout: 10 * time.Millisecond, ReceiptDeadline: time.Second, SweepInterval: 50 * time.Millisecond}
	never := func(_ carriers.Network, o *sim.Options) { o.ReceiptDelay = time.Hour } // enroute all along
	w := newWorld(t, opts, never)
	acct := w.account(100_000_00)
	const total = 22_000 // more than a sweep round reads
	var cost int64
	for i := range 3 {
		res, err := w.send(acct, recipients(total/3, carriers.NetworkUnknown, uint64(40+i)), "no receipt")
		if err != nil {
			t.Fatal(err)
		}
		cost += res.CostCents
	}
	w.waitAllFinal(total/3*3, 2*time.Minute)
	failed := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'failed' AND provider_status = 'EXPIRED'`)
	refunds := w.sqlInt(`SELECT coalesce(sum(amount_cents),0) FROM wallet_transactions WHERE type = 'refund'`)
	if failed != total/3*3 || refunds != cost || w.balance(acct) != 100_000_00 {
		t.Logf("statuses: delivered %d, failed %d (%d UNKNOWN)", w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'delivered'`),
			w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'failed'`), w.sqlInt(`SELECT count(*) FROM messages WHERE provider_status = 'UNKNOWN'`))
		t.Fatalf("%d expired, %d refunded of %d cost, balance %d; want every message expired and refunded once", failed, refunds, cost, w.balance(acct))
	}
}

// Refunds give back the volume the tier counts: failed sends buy no cheaper price.
func TestRefundsGiveBackTierVolume(t *testing.T) {
	w := newWorld(t, actors.Options{}, func(_ carriers.Network, o *sim.Options) { o.RejectRate = 1 })
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(1200, carriers.NetworkUnknown, 8), "rejected"); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 1200, 30*time.Second)
	eventually(t, 10*time.Second, "the refunds", func() (bool, string) { return w.balance(acct) == 1000_00, fmt.Sprint(w.balance(acct)) })
	wl, err := w.st.Wallet(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	if wl.LifetimeSMS != 0 || wl.TotalSMSSent != 0 {
		t.Fatalf("lifetime %d, sent %d after every message failed; want 0 (refunded volume buys no tier)", wl.LifetimeSMS, wl.TotalSMSSent)
	}
	res, err := w.send(acct, recipients(1, carriers.Safaricom, 9), "price")
	if err != nil || res.CostCents != 50 {
		t.Fatalf("next send = %+v, %v; want the Starter price 0.50", res, err)
	}
}

// reusingCarrier gives every message the same id: the carrier reuses its ids.
type reusingCarrier struct{ actors.Carrier }

func (reusingCarrier) Submit(context.Context, actors.Outgoing) (string, error) { return "same-id", nil }

// A carrier id given to a second message keeps both references; the reuse is counted and a
// receipt goes to the newest submission waiting for one.
func TestReusedProviderIDKeepsBoth(t *testing.T) {
	w := newWorldWith(t, actors.Options{}, nil, func(w *world) {
		w.wrap = func(cs map[carriers.Network]actors.Carrier) map[carriers.Network]actors.Carrier {
			cs[carriers.Safaricom] = reusingCarrier{cs[carriers.Safaricom]}
			return cs
		}
	})
	acct := w.account(10_00)
	for i := range 2 {
		if _, err := w.send(acct, recipients(1, carriers.Safaricom, uint64(10+i)), "reuse"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the submission", func() (bool, string) {
			n := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'sent'`)
			return n == int64(i+1), fmt.Sprint(n)
		})
	}
	if n := w.sqlInt(`SELECT count(*) FROM provider_refs WHERE provider_message_id = 'same-id'`); n != 2 {
		t.Fatalf("%d references to the reused id; want both kept", n)
	}
	if n := w.metric("tuma_receipts_provider_id_reused_total", map[string]string{"network": "safaricom"}); n != 1 {
		t.Errorf("reuse counted %v times; want 1", n)
	}
	newest := `(SELECT id FROM messages ORDER BY id DESC LIMIT 1)`
	w.eng.Receipt(carriers.Safaricom, "same-id", actors.CarrierStatus{Final: true, Delivered: true, ProviderStatus: "DELIVRD"})
	eventually(t, 10*time.Second, "the receipt", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM messages WHERE id = ` + newest + ` AND status = 'delivered'`)
		return n == 1, fmt.Sprint(n)
	})
	if n := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'sent'`); n != 1 {
		t.Errorf("%d messages still waiting; want the older one only", n)
	}
}

// One panic of the engine's root must not kill the engine: everything is respawned and the
// work in hand finishes, and new sends go through.
func TestSupervisorPanicRestartsTheWholeEngine(t *testing.T) {
	w := newWorld(t, actors.Options{}, slowNetworks)
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(1000, carriers.NetworkUnknown, 12), "before"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "dispatch to start", func() (bool, string) { return w.accepted() > 50, fmt.Sprint(w.accepted()) })
	before, ok := actors.TenantName(w.eng, acct)
	if !ok {
		t.Fatal("no tenant while its job dispatches")
	}
	actors.PanicSupervisor(w.eng)
	eventually(t, 10*time.Second, "the restart", func() (bool, string) {
		n := w.metric("tuma_actor_restarts_total", map[string]string{"kind": "supervisor"})
		return n == 1, fmt.Sprint(n)
	})
	if _, err := w.send(acct, recipients(100, carriers.NetworkUnknown, 13), "after"); err != nil {
		t.Fatalf("send after the restart: %v", err)
	}
	// A name of its own: what the links tell the old tenant's jobs (their submits fenced)
	// must not reach the new one's (it did, and the new tenant stopped as if replaced).
	if after, _ := actors.TenantName(w.eng, acct); after == before {
		t.Errorf("the tenant after the restart is named %q, as the one before", after)
	}
	w.waitFinal(acct, 1100, time.Minute)
	if got := w.accepted(); got != 1100 {
		t.Errorf("%d submits accepted for 1100 messages; want each once", got)
	}
}

// A tenant that panics reloads itself and resumes its jobs from the store; nothing is
// orphaned and nothing is sent twice.
func TestTenantPanicResumesItsJobs(t *testing.T) {
	w := newWorld(t, actors.Options{}, slowNetworks)
	acct := w.account(2000_00)
	for i := range 3 {
		if _, err := w.send(acct, recipients(700, carriers.NetworkUnknown, uint64(20+i)), "tenant"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "dispatch to start", func() (bool, string) { return w.accepted() > 100, fmt.Sprint(w.accepted()) })
	if !actors.PanicTenant(w.eng, acct) {
		t.Fatal("no tenant actor to panic")
	}
	w.waitFinal(acct, 2100, time.Minute)
	if got := w.accepted(); got != 2100 {
		t.Errorf("%d submits accepted for 2100 messages; want each once", got)
	}
	if n := w.metric("tuma_actor_restarts_total", map[string]string{"kind": "tenant"}); n != 1 {
		t.Errorf("tenant restarts %v; want 1", n)
	}
}

// flushWatch is a store whose flushes are slow and which records whether two ran at once.
type flushWatch struct {
	*persistence.Store
	running, overlaps atomic.Int32
}

func (f *flushWatch) FlushReceipts(ctx context.Context, b persistence.ReceiptBatch) (persistence.FlushResult, error) {
	if f.running.Add(1) > 1 {
		f.overlaps.Add(1)
	}
	defer f.running.Add(-1)
	time.Sleep(100 * time.Millisecond) // a flush long enough for a panic to land inside it
	return f.Store.FlushReceipts(ctx, b)
}

// A receipts actor restarted while its flush runs must not start a second one: status writes
// stay in order.
func TestReceiptsRestartKeepsOneFlushAtATime(t *testing.T) {
	var watch *flushWatch
	w := newWorldWith(t, actors.Options{ReceiptsShards: 1}, nil, func(w *world) {
		watch = &flushWatch{Store: w.st}
		w.store = watch
	})
	acct := w.account(1000_00)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20 {
			if _, err := w.send(acct, recipients(50, carriers.NetworkUnknown, uint64(200+i)), "flush"); err != nil {
				t.Error(err)
			}
			time.Sleep(20 * time.Millisecond) // a stream of traffic while the actor restarts
		}
	})
	for range 5 {
		eventually(t, 10*time.Second, "a flush to run", func() (bool, string) { return watch.running.Load() > 0, "" })
		actors.PanicReceipts(w.eng)
	}
	wg.Wait()
	w.waitFinal(acct, 1000, time.Minute)
	if n := watch.overlaps.Load(); n != 0 {
		t.Fatalf("%d flushes started while another ran", n)
	}
}

// slowMarks is a store whose marks take a while, so submits pile up waiting for one.
type slowMarks struct{ *persistence.Store }

func (s slowMarks) MarkBatches(ctx context.Context, node string, batches []persistence.MarkBatch) ([]map[persistence.FenceKey]bool, error) {
	time.Sleep(200 * time.Millisecond)
	return s.Store.MarkBatches(ctx, node, batches)
}

// Stopping drains the links even while submits wait for their mark: those are not sent, and
// stay queued for the next start.
func TestStopDrainsLinksWithSubmitsWaitingForAMark(t *testing.T) {
	w := newWorldWith(t, actors.Options{}, nil, func(w *world) { w.store = slowMarks{w.st} })
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(600, carriers.NetworkUnknown, 31), "stop"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "submits to wait for a mark", func() (bool, string) {
		n := w.metric("tuma_link_queue_depth", map[string]string{"network": "safaricom"})
		return n > 0, fmt.Sprint(n)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.eng.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// A network that cannot be reached fails no message: its breaker opens, its messages wait,
// the other networks go on, and once it is back its queue drains.
func TestUnreachableNetworkWaitsThenDrains(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	telkom := w.sims.Network(carriers.Telkom)
	down := telkom.Options()
	down.Down = true
	if err := telkom.Configure(down); err != nil {
		t.Fatal(err)
	}
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(200, carriers.Telkom, 41), "down"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.send(acct, recipients(200, carriers.Safaricom, 42), "up"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "telkom's breaker to open", func() (bool, string) {
		s := w.metric("tuma_link_breaker_state", map[string]string{"network": "telkom"})
		return s == 2, fmt.Sprint(s)
	})
	eventually(t, 20*time.Second, "safaricom to deliver while telkom is down", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM messages WHERE network = 1 AND status = 'delivered'`)
		return n == 200, fmt.Sprint(n)
	})
	if n := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'failed'`); n != 0 {
		t.Fatalf("%d messages failed while their network was unreachable; want none", n)
	}
	down.Down = false
	if err := telkom.Configure(down); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 400, time.Minute)
	if n := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'delivered'`); n != 400 {
		t.Errorf("%d delivered; want all 400 once the network is back", n)
	}
}

// A tenant's jobs that only wait for an unreachable network hold no dispatch slot: its
// later jobs still reach the other networks. (Each job here has recipients on both.)
func TestUnreachableNetworkDoesNotHoldUpTheTenantsOtherJobs(t *testing.T) {
	w := newWorld(t, actors.Options{MaxDispatchingJob: 2}, nil)
	telkom := w.sims.Network(carriers.Telkom)
	down := telkom.Options()
	down.Down = true
	if err := telkom.Configure(down); err != nil {
		t.Fatal(err)
	}
	acct := w.account(1000_00)
	const jobs = 10 // five times the tenant's slots
	for i := range jobs {
		rs := append(recipients(5, carriers.Telkom, uint64(100+i)), recipients(5, carriers.Safaricom, uint64(200+i))...)
		if _, err := w.send(acct, rs, "mixed"); err != nil {
			t.Fatal(err)
		}
	}
	defer w.dumpOnFailure()
	eventually(t, 20*time.Second, "every job's safaricom messages delivered while telkom is down", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM messages WHERE network = 1 AND status = 'delivered'`)
		return n == 5*jobs, fmt.Sprintf("%d of %d delivered, jobs waiting %v", n, 5*jobs, w.metric("tuma_engine_jobs_waiting", nil))
	})
	down.Down = false
	if err := telkom.Configure(down); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 10*jobs, time.Minute)
	if n := w.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1 AND status = 'completed'`, acct); n != jobs {
		t.Errorf("%d jobs completed; want %d", n, jobs)
	}
}

// A receipt for an id the node never learned (the answer to a submission lost with its
// connection) does not hold up a stop: once the links are drained and every submission
// outcome is written, it can match nothing, and the stop ends without waiting out its grace.
func TestStopDoesNotWaitOnReceiptsThatMatchNothing(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(50, carriers.NetworkUnknown, 41), "before"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		w.eng.Receipt(carriers.Safaricom, fmt.Sprintf("never-submitted-%d", i),
			actors.CarrierStatus{Final: true, Delivered: true, ProviderStatus: "DELIVRD"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := w.eng.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %v with receipts that match nothing", took)
	}
}
