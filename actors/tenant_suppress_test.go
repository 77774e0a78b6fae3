package actors_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// suppress adds numbers to an account's list as the API does: the write, then the tenant.
func (w *world) suppress(acct uuid.UUID, rs ...persistence.Recipient) {
	w.t.Helper()
	ctx := context.Background()
	for _, r := range rs {
		if _, _, err := w.st.Suppress(ctx, acct, r.NSN, persistence.SuppressedByAPI, ""); err != nil {
			w.t.Fatal(err)
		}
		if err := w.eng.SuppressionChanged(ctx, acct, r.NSN, true); err != nil {
			w.t.Fatal(err)
		}
	}
}

// The send right after a suppression leaves the number out and charges only the rest, in
// small (inline) and large (expanded) sends, and a send of only suppressed numbers is refused
// with nothing charged; a number taken off the list is sent to again.
func TestSuppressedNumbersLeftOutAtAcceptance(t *testing.T) {
	w := newWorld(t, actors.Options{InlineLimit: 50}, nil)
	acct := w.account(1_000_000)
	rs := recipients(120, 0, 7)
	if _, err := w.send(acct, rs[:1], "warm the tenant"); err != nil {
		t.Fatal(err)
	}
	total := int64(1)
	for _, to := range [][]persistence.Recipient{rs[10:13], rs[20:120]} { // inline, then expanded
		n := len(to)
		w.suppress(acct, to[0], to[n-1])
		before := w.balance(acct)
		res, err := w.send(acct, to, "hello")
		if err != nil {
			t.Fatal(err)
		}
		if res.Recipients != n-2 || res.Suppressed != 2 || res.CostCents != before-w.balance(acct) || res.Units != int64(n-2) {
			t.Fatalf("%d recipients, 2 suppressed: %+v, charged %d", n, res, before-w.balance(acct))
		}
		total += int64(n - 2)
		w.waitFinal(acct, total, 20*time.Second)
		if got := w.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1 AND recipient = ANY($2)`, acct,
			[]string{to[0].E164(), to[n-1].E164()}); got != 0 {
			t.Fatalf("%d messages to suppressed numbers", got)
		}
	}
	q, err := w.eng.Quote(context.Background(), actors.SendRequest{AccountID: acct, Recipients: rs[8:14], Message: "hi", Source: "api"})
	if err != nil || q.Suppressed != 2 || q.Recipients != 4 {
		t.Fatalf("quote of 6 numbers, 2 suppressed: %+v, %v", q, err)
	}
	only := rs[5:7]
	w.suppress(acct, only...)
	before := w.balance(acct)
	if _, err := w.send(acct, only, "hello"); !errors.Is(err, actors.ErrAllSuppressed) {
		t.Fatalf("a send to suppressed numbers only: %v; want ErrAllSuppressed", err)
	}
	if w.balance(acct) != before {
		t.Errorf("a refused send charged %d", before-w.balance(acct))
	}
	if err := w.st.Unsuppress(context.Background(), acct, only[0].NSN); err != nil {
		t.Fatal(err)
	}
	if err := w.eng.SuppressionChanged(context.Background(), acct, only[0].NSN, false); err != nil {
		t.Fatal(err)
	}
	if res, err := w.send(acct, only, "hello"); err != nil || res.Recipients != 1 || res.Suppressed != 1 {
		t.Fatalf("after one number left the list: %+v, %v", res, err)
	}
}

// acceptThenSuppress suppresses numbers in the moment after a job is accepted and before its
// messages are submitted: from inside the accept's commit.
type acceptThenSuppress struct {
	actors.Store
	then func()
}

func (s acceptThenSuppress) AcceptJobs(ctx context.Context, jobs []persistence.NewJob) ([]persistence.AcceptResult, error) {
	res, err := s.Store.AcceptJobs(ctx, jobs)
	if err == nil && s.then != nil {
		s.then()
	}
	return res, err
}

// A number suppressed after its send was accepted and before its message went is failed
// OPTED_OUT and refunded; the others go.
func TestSuppressedAfterAcceptanceIsFailedAndRefunded(t *testing.T) {
	suppressedAfterAcceptance(t, func(w *world, acct uuid.UUID, r persistence.Recipient) {
		w.suppress(acct, r) // the tenant is not waiting on the writer: it can answer
	})
}

// Numbers imported (many at once) after a send was accepted and before its messages went are
// failed OPTED_OUT and refunded, as one suppressed alone is.
func TestImportedAfterAcceptanceIsFailedAndRefunded(t *testing.T) {
	suppressedAfterAcceptance(t, func(w *world, acct uuid.UUID, r persistence.Recipient) {
		ctx := context.Background()
		if _, err := w.st.SuppressMany(ctx, acct, []uint32{r.NSN}, []string{""}, persistence.SuppressedByAPI); err != nil {
			w.t.Error(err)
		}
		if err := w.eng.SuppressionsImported(ctx, acct); err != nil {
			w.t.Error(err)
		}
	})
}

// suppressedAfterAcceptance sends to three numbers, suppressing the second with suppress in
// the moment after the send is accepted, and checks that its message alone fails OPTED_OUT,
// refunded.
func suppressedAfterAcceptance(t *testing.T, suppress func(w *world, acct uuid.UUID, r persistence.Recipient)) {
	t.Helper()
	var w *world
	var acct uuid.UUID
	var late persistence.Recipient
	var armed atomic.Bool
	w = newWorldWith(t, actors.Options{}, nil, func(w *world) {
		w.store = acceptThenSuppress{Store: w.st, then: func() {
			if armed.CompareAndSwap(true, false) {
				suppress(w, acct, late)
			}
		}}
	})
	acct = w.account(1_000_000)
	rs := recipients(3, 0, 11)
	late = rs[1]
	before := w.balance(acct)
	armed.Store(true)
	res, err := w.send(acct, rs, "hello")
	if err != nil || res.Recipients != 3 {
		t.Fatalf("send: %+v, %v", res, err)
	}
	if c := w.waitFinal(acct, 3, 20*time.Second); c.Failed != 1 {
		t.Fatalf("counts %+v; want the suppressed number failed", c)
	}
	if n := w.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1 AND provider_status = 'OPTED_OUT' AND recipient = $2`,
		acct, late.E164()); n != 1 {
		t.Errorf("%d OPTED_OUT messages to the suppressed number %s; want 1", n, late.E164())
	}
	if spent := before - w.balance(acct); spent != res.CostCents/3*2 {
		t.Errorf("spent %d of %d; want the suppressed message refunded", spent, res.CostCents)
	}
}

// Messages already queued when their numbers are suppressed (in the job's queue and in a
// throttled link's) are failed OPTED_OUT and refunded, not sent: in a small send whose
// messages came in hand, in a large one read from the store a page at a time, and for an
// import as for numbers suppressed one by one.
func TestSuppressedWhileQueuedIsNotSent(t *testing.T) {
	one := func(w *world, acct uuid.UUID, rs []persistence.Recipient) { w.suppress(acct, rs...) }
	imported := func(w *world, acct uuid.UUID, rs []persistence.Recipient) {
		ctx := context.Background()
		nsns, notes := make([]uint32, len(rs)), make([]string, len(rs))
		for i, r := range rs {
			nsns[i] = r.NSN
		}
		if err := w.eng.SuppressionsImported(ctx, acct); err != nil {
			w.t.Fatal(err)
		}
		if _, err := w.st.SuppressMany(ctx, acct, nsns, notes, persistence.SuppressedByAPI); err != nil {
			w.t.Fatal(err)
		}
		if err := w.eng.SuppressionsImported(ctx, acct); err != nil {
			w.t.Fatal(err)
		}
	}
	t.Run("inline", func(t *testing.T) { suppressedWhileQueued(t, 200, one) })
	t.Run("stored", func(t *testing.T) { suppressedWhileQueued(t, 50, one) })
	t.Run("imported", func(t *testing.T) { suppressedWhileQueued(t, 200, imported) })
}

// suppressedWhileQueued sends 150 messages through a link that takes 20 a second, suppresses
// every number once a few have gone, and checks that the rest fail OPTED_OUT, refunded.
func suppressedWhileQueued(t *testing.T, inlineLimit int, suppress func(w *world, acct uuid.UUID, rs []persistence.Recipient)) {
	const n, tps = 150, 20
	w := newWorld(t, actors.Options{InlineLimit: inlineLimit, JobWindow: 60,
		Links: map[carriers.Network]actors.LinkOptions{carriers.Safaricom: {TPS: tps}}}, nil)
	acct := w.account(1_000_000)
	rs := recipients(n, carriers.Safaricom, 23)
	before := w.balance(acct)
	res, err := w.send(acct, rs, "hello")
	if err != nil || res.Recipients != n {
		t.Fatalf("send: %+v, %v", res, err)
	}
	gone := func() int64 {
		return w.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1 AND status IN ('sent', 'delivered')`, acct)
	}
	eventually(t, 20*time.Second, "a few messages to go", func() (bool, string) {
		g := gone()
		return g >= 5, fmt.Sprintf("%d sent", g)
	})
	suppress(w, acct, rs)
	goneThen := gone()
	c := w.waitFinal(acct, n, 30*time.Second)
	opted := w.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1 AND provider_status = 'OPTED_OUT'`, acct)
	// What the link had taken to mark and submit when the numbers were suppressed still goes:
	// at 20 a second, half a second's worth (markAheadFor), and what it took meanwhile.
	if sent := n - opted; opted != c.Failed || sent > goneThen+tps {
		t.Fatalf("%d sent (%d when every number was suppressed), %d OPTED_OUT, counts %+v; want the rest OPTED_OUT",
			sent, goneThen, opted, c)
	}
	if spent, each := before-w.balance(acct), res.CostCents/n; spent != each*(n-opted) {
		t.Errorf("spent %d for %d messages sent at %d each; want the OPTED_OUT ones refunded", spent, n-opted, each)
	}
}
