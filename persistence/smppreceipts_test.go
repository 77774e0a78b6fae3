package persistence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// Claims of an account's receipts (as two nodes make them at once) take each row once, oldest
// first; a leased row is not claimed again until released or its lease ends; a delivered one
// never again; another account's rows are not taken.
func TestClaimSMPPReceipts(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	acct, other := uuid.New(), uuid.New()
	insert := func(a uuid.UUID) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO smpp_receipts (account_id, message_id, status, recipient, sender, text,
			submitted_at, done_at) VALUES ($1, $2, 'delivered', '+254712345678', 'TUMA', 'hi', now(), now())`, a, uuid.New()); err != nil {
			t.Fatal(err)
		}
	}
	for range 6 {
		insert(acct)
	}
	insert(other)

	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs, err := st.ClaimSMPPReceipts(ctx, acct, time.Minute, 4)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i, r := range rs {
				if r.AccountID != acct || (i > 0 && r.ID <= rs[i-1].ID) {
					t.Errorf("claim = %+v; want the account's rows, oldest first", rs)
				}
				seen[r.ID]++
			}
		}()
	}
	wg.Wait()
	if len(seen) != 6 {
		t.Fatalf("two claims of 4 took %d distinct rows (%v); want all 6, each once", len(seen), seen)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("row %d claimed %d times", id, c)
		}
	}
	if rs, err := st.ClaimSMPPReceipts(ctx, acct, time.Minute, 10); err != nil || len(rs) != 0 {
		t.Fatalf("a claim while all are leased = %v, %v; want none", rs, err)
	}

	var first, second int64 = -1, -1
	for id := range seen {
		if first < 0 || id < first {
			first = id
		}
	}
	for id := range seen {
		if id != first && (second < 0 || id < second) {
			second = id
		}
	}
	if err := st.SMPPReceiptRetry(ctx, first, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := st.SMPPReceiptsDelivered(ctx, []int64{second}); err != nil {
		t.Fatal(err)
	}
	if err := st.SMPPReceiptRetry(ctx, second, 0, true); err != nil { // too late: it stays delivered
		t.Fatal(err)
	}
	rs, err := st.ClaimSMPPReceipts(ctx, acct, time.Millisecond, 10)
	if err != nil || len(rs) != 1 || rs[0].ID != first || rs[0].Attempts != 1 || rs[0].Status != persistence.MessageDelivered {
		t.Fatalf("claim after a retry = %+v, %v; want row %d alone, 1 attempt", rs, err, first)
	}
	for deadline := time.Now().Add(5 * time.Second); ; { // its 1 ms lease ends: it comes back
		rs, err = st.ClaimSMPPReceipts(ctx, acct, time.Minute, 10)
		if err != nil || len(rs) > 1 || len(rs) == 1 && rs[0].ID != first {
			t.Fatalf("claim after the lease ended = %+v, %v; want row %d alone", rs, err, first)
		}
		if len(rs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a row whose lease ended was not claimed again")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if rs, err := st.ClaimSMPPReceipts(ctx, other, time.Minute, 10); err != nil || len(rs) != 1 || rs[0].AccountID != other {
		t.Errorf("the other account's claim = %+v, %v; want its one row", rs, err)
	}
}

// A message of an smpp job is receipted as its client asked (NewJob.Receipt): never, on
// either final outcome, or on failure only, whether written with its job, expanded later or
// inserted already final; a message of any other source never is.
func TestSMPPReceiptModes(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	acct := fundedAccount(t, st, 10_000)
	msg := func(nsn uint32) persistence.NewMessage {
		r := persistence.Recipient{NSN: nsn, Network: carriers.Safaricom}
		return persistence.NewMessage{ID: persistence.NewID(), Recipient: r.E164(), Network: r.Network, Sender: "TUMA",
			Parts: 1, Encoding: carriers.GSM7, CostCents: 50}
	}
	// Each job has two messages: the first is delivered, the second fails.
	newJob := func(source string, mode persistence.ReceiptMode) persistence.NewJob {
		j := job(acct, 50)
		j.Source, j.Receipt = source, mode
		j.Recipients, j.Units, j.CostCents = 2, 2, 100
		j.Inline = []persistence.NewMessage{msg(712000001), msg(712000002)}
		return j
	}
	jobs := []persistence.NewJob{
		newJob(persistence.SourceSMPP, persistence.ReceiptNone),
		newJob(persistence.SourceSMPP, persistence.ReceiptFinal),
		newJob(persistence.SourceSMPP, persistence.ReceiptFailure),
		newJob("api", persistence.ReceiptFinal),
	}
	expanded := newJob(persistence.SourceSMPP, persistence.ReceiptFailure)
	rows := expanded.Inline
	expanded.Inline, expanded.Pending = nil, persistence.EncodeRecipients([]persistence.Recipient{{NSN: 712000001, Network: carriers.Safaricom},
		{NSN: 712000002, Network: carriers.Safaricom}})
	if res, err := st.AcceptJobs(ctx, append(jobs, expanded)); err != nil || res[0].Err != nil || res[4].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	if ok, err := st.ExpandJob(ctx, expanded, 0, rows, true); err != nil || !ok {
		t.Fatalf("expand: %v %v", ok, err)
	}
	expanded.Inline = rows
	jobs = append(jobs, expanded)
	for _, j := range jobs {
		for i, m := range j.Inline {
			status, at := "delivered", "delivered_at"
			if i == 1 {
				status, at = "failed", "failed_at"
			}
			if _, err := conn.Exec(ctx, `UPDATE messages SET status = $2, `+at+` = now() WHERE id = $1`, m.ID, status); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Rows inserted final (the insert trigger), as written for a failure-only receipt.
	final := [2]uuid.UUID{persistence.NewID(), persistence.NewID()}
	for i, status := range []string{"delivered", "failed"} {
		if _, err := conn.Exec(ctx, `INSERT INTO messages (id, job_id, account_id, recipient, network, sender, prefixed, parts,
				encoding, cost_cents, status, smpp, smpp_failed_only)
			VALUES ($1, $2, $3, '+254712000003', 1, 'TUMA', false, 1, 1, 0, $4, true, true)`, final[i], jobs[2].ID, acct, status); err != nil {
			t.Fatal(err)
		}
	}

	want := map[uuid.UUID]string{
		jobs[1].Inline[0].ID: "delivered", jobs[1].Inline[1].ID: "failed", // on either outcome
		jobs[2].Inline[1].ID: "failed", // on failure only
		jobs[4].Inline[1].ID: "failed", // the same, expanded
		final[1]:             "failed",
	}
	rs, err := st.ClaimSMPPReceipts(ctx, acct, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uuid.UUID]string{}
	for _, r := range rs {
		got[r.MessageID] = string(r.Status)
	}
	if len(got) != len(want) || len(rs) != len(want) {
		t.Fatalf("receipts %v; want %v", got, want)
	}
	for id, s := range want {
		if got[id] != s {
			t.Errorf("receipt of %s = %q; want %q (all: %v)", id, got[id], s, got)
		}
	}
}
