package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func TestTakeFenceCountsIncarnationsAndNamesThePrevious(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 100)
	first, err := st.TakeFence(ctx, acct, "node-a")
	if err != nil || first.Epoch != 1 || first.Replaced {
		t.Fatalf("first fence %+v, %v; want epoch 1 replacing nobody", first, err)
	}
	second, err := st.TakeFence(ctx, acct, "node-b")
	if err != nil || second.Epoch != 2 || !second.Replaced || second.Previous != "node-a" {
		t.Fatalf("second fence %+v, %v; want epoch 2 replacing node-a", second, err)
	}
	if _, err := st.TakeFence(ctx, uuid.New(), "node-a"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("fence of an unknown account: %v; want ErrNotFound", err)
	}
}

// A debit carrying a replaced epoch writes nothing; the rest of its group commits.
func TestAcceptJobsRefusesAReplacedIncarnation(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	moved, stayed := fundedAccount(t, st, 1000), fundedAccount(t, st, 1000)
	old, _ := st.TakeFence(ctx, moved, "node-a")
	if _, err := st.TakeFence(ctx, moved, "node-b"); err != nil {
		t.Fatal(err)
	}
	here, _ := st.TakeFence(ctx, stayed, "node-a")
	stale, fresh := job(moved, 100), job(stayed, 100)
	stale.Fence, fresh.Fence = old.Epoch, here.Epoch
	res, err := st.AcceptJobs(ctx, []persistence.NewJob{stale, fresh})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, persistence.ErrFenced) || res[1].Err != nil {
		t.Fatalf("results %+v; want the replaced incarnation's job fenced, the other accepted", res)
	}
	w, _ := st.Wallet(ctx, moved)
	c, _ := st.MessageCounts(ctx, moved)
	if w.BalanceCents != 1000 || c.Total() != 0 {
		t.Errorf("fenced account: balance %d, %d messages; want 1000 and none", w.BalanceCents, c.Total())
	}
	if w, _ := st.Wallet(ctx, stayed); w.BalanceCents != 900 {
		t.Errorf("other account balance %d; want 900", w.BalanceCents)
	}
	// Unfenced jobs (epoch 0, written outside any tenant) are not checked.
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{job(moved, 10)}); err != nil || res[0].Err != nil {
		t.Errorf("an unfenced job: %+v, %v; want accepted", res, err)
	}
}

// A mark leaves out the submits of a replaced incarnation and names its account.
func TestMarkLeavesOutAReplacedIncarnation(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	moved, stayed := fundedAccount(t, st, 1000), fundedAccount(t, st, 1000)
	old, _ := st.TakeFence(ctx, moved, "node-a")
	here, _ := st.TakeFence(ctx, stayed, "node-a")
	if _, err := st.TakeFence(ctx, moved, "node-b"); err != nil {
		t.Fatal(err)
	}
	a, b, c := persistence.NewID(), persistence.NewID(), persistence.NewID()
	id := persistence.NewID()
	fenced, err := st.Mark(ctx, id, "node-a", carriers.Safaricom, []persistence.SubmitKey{
		{AccountID: moved, ID: a, Fence: old.Epoch}, {AccountID: stayed, ID: b, Fence: here.Epoch}, {AccountID: moved, ID: c}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fenced) != 1 || !fenced[persistence.FenceKey{AccountID: moved, Epoch: old.Epoch}] {
		t.Fatalf("fenced %v; want only %s at epoch %d", fenced, moved, old.Epoch)
	}
	conn := connect(t, url)
	var msgs []uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT messages FROM submit_marks WHERE id = $1`, id).Scan(&msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0] != b || msgs[1] != c {
		t.Errorf("marked %v; want [%s %s] (the fenced submit left out, the unfenced kept)", msgs, b, c)
	}
	// A batch that is all fenced writes no mark at all.
	none := persistence.NewID()
	if fenced, err := st.Mark(ctx, none, "node-a", carriers.Safaricom, []persistence.SubmitKey{{AccountID: moved, ID: a, Fence: old.Epoch}}); err != nil || len(fenced) != 1 {
		t.Fatalf("all-fenced mark: %v, %v", fenced, err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM submit_marks WHERE id = $1`, none).Scan(&n); err != nil || n != 0 {
		t.Errorf("all-fenced mark wrote %d rows (%v); want none", n, err)
	}
}

// TakeFence waits for a write holding the current epoch to commit: whatever that write
// marked is visible to the new incarnation when its fence is taken.
func TestTakeFenceWaitsForWritesHoldingTheEpoch(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	f, _ := st.TakeFence(ctx, acct, "node-a")
	conn := connect(t, url)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What a mark's fence check does.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM tenant_fences WHERE account_id = $1 AND epoch = $2 FOR SHARE`, acct, f.Epoch); err != nil {
		t.Fatal(err)
	}
	took := make(chan persistence.Fence, 1)
	go func() {
		nf, err := st.TakeFence(ctx, acct, "node-b")
		if err != nil {
			t.Error(err)
		}
		took <- nf
	}()
	select {
	case nf := <-took:
		t.Fatalf("fence taken (%+v) while a write held the epoch", nf)
	case <-time.After(300 * time.Millisecond): // a negative check: it must still be waiting
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case nf := <-took:
		if nf.Epoch != f.Epoch+1 {
			t.Errorf("new epoch %d; want %d", nf.Epoch, f.Epoch+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fence not taken after the write committed")
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
