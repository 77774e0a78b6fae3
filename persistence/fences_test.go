package persistence_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
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

// movedAccount makes two accounts whose tenants started on node-a, then moves the first to
// node-b: old is its replaced incarnation, here the second's live one.
func movedAccount(t *testing.T, st *persistence.Store) (moved, stayed uuid.UUID, old, here persistence.Fence) {
	t.Helper()
	ctx := context.Background()
	moved, stayed = fundedAccount(t, st, 1000), fundedAccount(t, st, 1000)
	old, _ = st.TakeFence(ctx, moved, "node-a")
	here, _ = st.TakeFence(ctx, stayed, "node-a")
	if _, err := st.TakeFence(ctx, moved, "node-b"); err != nil {
		t.Fatal(err)
	}
	return moved, stayed, old, here
}

// markOne writes one Safaricom link's mark and returns its fenced incarnations.
func markOne(ctx context.Context, st *persistence.Store, id uuid.UUID, node string, msgs []persistence.SubmitKey) (map[persistence.FenceKey]bool, error) {
	f, err := st.MarkBatches(ctx, node, []persistence.MarkBatch{{ID: id, Network: carriers.Safaricom, Msgs: msgs}})
	if err != nil {
		return nil, err
	}
	return f[0], nil
}

// A mark leaves out the submits of a replaced incarnation and names its account.
func TestMarkLeavesOutAReplacedIncarnation(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	moved, stayed, old, here := movedAccount(t, st)
	a, b, c := persistence.NewID(), persistence.NewID(), persistence.NewID()
	id := persistence.NewID()
	fenced, err := markOne(ctx, st, id, "node-a", []persistence.SubmitKey{
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
	if fenced, err := markOne(ctx, st, none, "node-a", []persistence.SubmitKey{{AccountID: moved, ID: a, Fence: old.Epoch}}); err != nil || len(fenced) != 1 {
		t.Fatalf("all-fenced mark: %v, %v", fenced, err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM submit_marks WHERE id = $1`, none).Scan(&n); err != nil || n != 0 {
		t.Errorf("all-fenced mark wrote %d rows (%v); want none", n, err)
	}
}

// Several links' batches are marked in one call: each gets its own row (its network, only
// its live submits) and its own fenced incarnations; a failing batch writes none of them.
func TestMarkBatchesKeepsEachBatchApart(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	moved, stayed, old, here := movedAccount(t, st)
	a, b, c := persistence.NewID(), persistence.NewID(), persistence.NewID()
	batches := []persistence.MarkBatch{
		{ID: persistence.NewID(), Network: carriers.Safaricom, Msgs: []persistence.SubmitKey{{AccountID: stayed, ID: a, Fence: here.Epoch}}},
		{ID: persistence.NewID(), Network: carriers.Airtel, Msgs: []persistence.SubmitKey{
			{AccountID: moved, ID: b, Fence: old.Epoch}, {AccountID: stayed, ID: c, Fence: here.Epoch}}},
		{ID: persistence.NewID(), Network: carriers.Telkom, Msgs: []persistence.SubmitKey{{AccountID: moved, ID: c}}}, // unfenced
	}
	fenced, err := st.MarkBatches(ctx, "node-a", batches)
	if err != nil {
		t.Fatal(err)
	}
	if len(fenced) != 3 || len(fenced[0]) != 0 || len(fenced[2]) != 0 ||
		len(fenced[1]) != 1 || !fenced[1][persistence.FenceKey{AccountID: moved, Epoch: old.Epoch}] {
		t.Fatalf("fenced %v; want only the Airtel batch's %s at epoch %d", fenced, moved, old.Epoch)
	}
	conn := connect(t, url)
	want := [][]uuid.UUID{{a}, {c}, {c}}
	for i, mb := range batches {
		var msgs []uuid.UUID
		var network int16
		if err := conn.QueryRow(ctx, `SELECT network, messages FROM submit_marks WHERE id = $1`, mb.ID).Scan(&network, &msgs); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if network != int16(mb.Network) || !slices.Equal(msgs, want[i]) {
			t.Errorf("batch %d marked %v on network %d; want %v on %d", i, msgs, network, want[i], mb.Network)
		}
	}
	// A batch that fails (its id is taken) takes the others down with it: nothing half marked.
	again := []persistence.MarkBatch{{ID: persistence.NewID(), Network: carriers.Safaricom, Msgs: []persistence.SubmitKey{{AccountID: stayed, ID: b}}}, batches[0]}
	if _, err := st.MarkBatches(ctx, "node-a", again); err == nil {
		t.Fatal("a batch with a taken id: no error")
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM submit_marks WHERE id = $1`, again[0].ID).Scan(&n); err != nil || n != 0 {
		t.Errorf("the failed call's first batch left %d rows (%v); want none", n, err)
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

// The orphan sweep's page: the accounts with open jobs, visited in id order a page at a time
// whatever their number of jobs, naming those whose fence another node holds or none does.
func TestAccountsHeldElsewhere(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	moved, stayed, _, _ := movedAccount(t, st) // fences: moved on node-b, stayed on node-a
	unfenced := fundedAccount(t, st, 1000)
	idle := fundedAccount(t, st, 1000) // no open job: never visited
	if _, err := st.TakeFence(ctx, idle, "node-b"); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	for acct, jobs := range map[uuid.UUID]int{moved: 3, stayed: 2, unfenced: 1} {
		for range jobs {
			if _, err := conn.Exec(ctx, `INSERT INTO open_jobs (job_id, account_id) VALUES ($1, $2)`, persistence.NewID(), acct); err != nil {
				t.Fatal(err)
			}
		}
	}
	open := []uuid.UUID{moved, stayed, unfenced}
	slices.SortFunc(open, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	want := map[uuid.UUID]bool{moved: true, unfenced: true} // held elsewhere from node-a's side
	var got []uuid.UUID
	after, pages := uuid.Nil, 0
	for {
		h, err := st.AccountsHeldElsewhere(ctx, "node-a", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, h.Accounts...)
		if h.Visited < 2 {
			break
		}
		if h.Last != open[pages*2-1] {
			t.Fatalf("page %d ended at %s; want %s", pages, h.Last, open[pages*2-1])
		}
		after = h.Last
	}
	if pages != 2 || len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Errorf("%d pages naming %v; want 2 pages naming %s and %s", pages, got, moved, unfenced)
	}
	if h, err := st.AccountsHeldElsewhere(ctx, "node-b", uuid.Nil, 10); err != nil || h.Visited != 3 || len(h.Accounts) != 2 {
		t.Errorf("from node-b: %+v, %v; want 3 visited, stayed and the unfenced one named", h, err)
	}
}
