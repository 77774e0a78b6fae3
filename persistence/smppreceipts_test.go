package persistence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
