package persistence_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func job(acct uuid.UUID, cost int64) persistence.NewJob {
	id := persistence.NewID()
	return persistence.NewJob{
		ID: id, AccountID: acct, Source: "api", Message: "hi", Senders: [carriers.NetworkSlots]string{"", "TUMA", "TUMA", "TUMA"},
		PriceCents: cost, Recipients: 1, Units: 1, CostCents: cost,
		Inline: []persistence.NewMessage{{ID: persistence.NewID(), Recipient: "+254712345678", Network: carriers.Safaricom,
			Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: cost}},
	}
}

func fundedAccount(t *testing.T, st *persistence.Store, cents int64) uuid.UUID {
	t.Helper()
	a, err := st.CreateAccount(context.Background(), newAccount(uuid.NewString()+"@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Credit(context.Background(), persistence.NewCredit{AccountID: a.ID, Cents: cents, Type: "topup", Description: "test"}); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func TestAcceptJobsOverdraftFailsOnlyThatAccount(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	rich, poor := fundedAccount(t, st, 1000), fundedAccount(t, st, 50)
	// The poor account's two jobs (50 + 10) overdraw it together, though each alone fits.
	res, err := st.AcceptJobs(ctx, []persistence.NewJob{job(rich, 100), job(poor, 50), job(poor, 10), job(rich, 200)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[3].Err != nil || res[3].Wallet.BalanceCents != 700 {
		t.Errorf("rich account results %+v, %+v; want both accepted leaving 700", res[0], res[3])
	}
	for _, i := range []int{1, 2} {
		if !errors.Is(res[i].Err, persistence.ErrInsufficientBalance) {
			t.Errorf("poor job %d = %+v; want insufficient balance", i, res[i])
		}
	}
	w, _ := st.Wallet(ctx, poor)
	c, _ := st.MessageCounts(ctx, poor)
	if w.BalanceCents != 50 || c.Total() != 0 {
		t.Errorf("poor account: balance %d, %d messages; want 50 and none", w.BalanceCents, c.Total())
	}
	if c, _ := st.MessageCounts(ctx, rich); c.Queued != 2 {
		t.Errorf("rich account queued %d; want 2", c.Queued)
	}
}

// A job whose message id is a message's already (an SMPP submit sent again after its first
// send's answer was lost) fails alone, ErrDuplicateMessage, with nothing debited; the rest of
// its group commits.
func TestAcceptJobsDuplicateMessageFailsOnlyThatJob(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, b := fundedAccount(t, st, 1000), fundedAccount(t, st, 1000)
	first := job(a, 100)
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{first}); err != nil || res[0].Err != nil {
		t.Fatalf("first accept = %+v, %v", res, err)
	}
	again := job(a, 100)
	again.Inline[0].ID = first.Inline[0].ID
	res, err := st.AcceptJobs(ctx, []persistence.NewJob{job(b, 100), again, job(b, 200)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[1].Err, persistence.ErrDuplicateMessage) || res[0].Err != nil || res[2].Err != nil {
		t.Fatalf("results %+v; want only the repeated message's job refused", res)
	}
	if w, _ := st.Wallet(ctx, a); w.BalanceCents != 900 {
		t.Errorf("the repeating account's balance %d; want 900 (charged once)", w.BalanceCents)
	}
	if w, _ := st.Wallet(ctx, b); w.BalanceCents != 700 {
		t.Errorf("the other account's balance %d; want 700", w.BalanceCents)
	}
}

// A job whose Idempotency-Key claim lapsed and was taken over by a retry must not commit: the
// retry will. The rest of its group commits as usual.
func TestAcceptJobsFencesOutALapsedClaim(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	k := persistence.IdempotencyKey{AccountID: acct, Key: "retry-me"}
	first, _, err := st.ClaimIdempotencyKey(ctx, k, []byte("h"), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	second, _, err := st.ClaimIdempotencyKey(ctx, k, []byte("h"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale, other, retry := job(acct, 100), job(acct, 10), job(acct, 100)
	stale.Idempotency, retry.Idempotency = &first, &second
	res, err := st.AcceptJobs(ctx, []persistence.NewJob{stale, other})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, persistence.ErrIdempotencyLost) || res[1].Err != nil {
		t.Fatalf("results %+v; want the lapsed claim fenced out and the other job accepted", res)
	}
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{retry}); err != nil || res[0].Err != nil {
		t.Fatalf("the retry holding the key: %+v, %v", res, err)
	}
	w, _ := st.Wallet(ctx, acct)
	if w.BalanceCents != 1000-10-100 {
		t.Errorf("balance %d; want %d (the key's job charged once)", w.BalanceCents, 1000-10-100)
	}
	if _, stored, err := st.ClaimIdempotencyKey(ctx, k, []byte("h"), time.Minute); err != nil || stored == nil || *stored.ResourceID != retry.ID {
		t.Errorf("the key replays %+v, %v; want the retry's job %s", stored, err, retry.ID)
	}
}

func TestGroupCommitsAndFlushesDoNotDeadlock(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	var accts []uuid.UUID
	for range 6 {
		accts = append(accts, fundedAccount(t, st, 1_000_000))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 30 {
				// Each group touches the accounts in a different order.
				var jobs []persistence.NewJob
				for k := range accts {
					jobs = append(jobs, job(accts[(k*(w+1)+i)%len(accts)], 1))
				}
				res, err := st.AcceptJobs(ctx, jobs)
				if err != nil {
					errs <- err
					return
				}
				// Fail the first message right away: a flush that refunds and moves counters on
				// the same rows the next group commit debits.
				_, err = st.FlushReceipts(ctx, persistence.ReceiptBatch{Failed: []persistence.Failure{
					{AccountID: jobs[0].AccountID, MessageID: jobs[0].Inline[0].ID, ProviderStatus: "REJECTD"},
				}})
				if err != nil {
					errs <- err
					return
				}
				_ = res
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent group commits and flushes: %v", err)
	}
}

func TestExpandedMessagesCarryTheirJobsAcceptance(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	rs := []persistence.Recipient{{NSN: 712345678, Network: carriers.Safaricom}, {NSN: 733123456, Network: carriers.Airtel}}
	j := job(acct, 100)
	j.Recipients, j.Units, j.CostCents = 2, 2, 100
	j.Inline, j.Pending = nil, persistence.EncodeRecipients(rs)
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The job waits a while before its rows are written, as a big job does behind others.
	if _, err := conn.Exec(ctx, `UPDATE jobs SET created_at = created_at - interval '1 minute' WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	msgs := make([]persistence.NewMessage, len(rs))
	for i, r := range rs {
		msgs[i] = persistence.NewMessage{ID: persistence.NewID(), Recipient: r.E164(), Network: r.Network, Sender: "TUMA",
			Parts: 1, Encoding: carriers.GSM7, CostCents: 50}
	}
	if ok, err := st.ExpandJob(ctx, j, 0, msgs, true); err != nil || !ok {
		t.Fatalf("expand: %v %v", ok, err)
	}
	var off int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM messages m JOIN jobs j ON j.id = m.job_id
		WHERE m.job_id = $1 AND m.created_at <> j.created_at`, j.ID).Scan(&off); err != nil {
		t.Fatal(err)
	}
	if off != 0 {
		t.Errorf("%d expanded messages are not dated at their job's acceptance", off)
	}
}

// A job written a chunk at a time takes each chunk once, from where the store says it stands,
// and a cancel part way refunds exactly what was not sent: the chunks not written (the job's
// totals less what its messages hold) and the written messages still queued.
func TestChunkedExpansionAndPartialCancel(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	rs := []persistence.Recipient{{NSN: 712345678, Network: carriers.Safaricom}, {NSN: 733123456, Network: carriers.Airtel},
		{NSN: 771234567, Network: carriers.Telkom}}
	parts := []int{1, 2, 3} // three recipients, 6 parts at 50 cents: 300 cents
	j := job(acct, 50)
	j.Recipients, j.Units, j.CostCents, j.NetworkCounts = 3, 6, 300, [carriers.NetworkSlots]int{0, 1, 1, 1}
	j.Inline, j.Pending = nil, persistence.EncodeRecipients(rs)
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	msg := func(i int) persistence.NewMessage {
		return persistence.NewMessage{ID: persistence.NewID(), Recipient: rs[i].E164(), Network: rs[i].Network, Sender: "TUMA",
			Parts: parts[i], Encoding: carriers.GSM7, CostCents: int64(parts[i]) * 50}
	}
	if ok, err := st.ExpandJob(ctx, j, 0, []persistence.NewMessage{msg(0)}, false); err != nil || !ok {
		t.Fatalf("first chunk: %v %v", ok, err)
	}
	if ok, err := st.ExpandJob(ctx, j, 0, []persistence.NewMessage{msg(0)}, false); err != nil || ok {
		t.Fatalf("the first chunk again = %v %v; want refused (the store stands at 1)", ok, err)
	}
	if ok, err := st.ExpandJob(ctx, j, 1, []persistence.NewMessage{msg(1)}, false); err != nil || !ok {
		t.Fatalf("second chunk: %v %v", ok, err)
	}
	rec, err := st.JobRecord(ctx, j.ID)
	if err != nil || rec.Expanded != 2 || rec.Pending == nil {
		t.Fatalf("record = %d expanded, pending %v, %v; want 2 written, the rest pending", rec.Expanded, rec.Pending != nil, err)
	}
	if _, err := st.CancelRemainder(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ExpandJob(ctx, j, 2, []persistence.NewMessage{msg(2)}, true); err != nil || ok {
		t.Fatalf("a chunk after the cancel = %v %v; want refused", ok, err)
	}
	w, err := st.Wallet(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if w.BalanceCents != 1000 {
		t.Errorf("balance %d after cancelling all of it (2 written and queued, 1 never written); want 1000", w.BalanceCents)
	}
}

// A cancel leaves queued a message under a submit mark (another node, or this one before a
// crash, may have handed it to a network: its submit or the job's ask settles it) and fails
// and refunds the rest.
func TestCancelRemainderLeavesMarkedMessages(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	j := job(acct, 50)
	second := j.Inline[0]
	second.ID, second.Recipient = persistence.NewID(), "+254712345679"
	j.Inline = append(j.Inline, second)
	j.Recipients, j.Units, j.CostCents = 2, 2, 100
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO submit_marks (id, network, accounts, messages, node) VALUES ($1, 1, $2, $3, 'node-a')`,
		persistence.NewID(), []uuid.UUID{acct}, []uuid.UUID{j.Inline[0].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelRemainder(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	var marked, other string
	if err := conn.QueryRow(ctx, `SELECT (SELECT status FROM messages WHERE id = $1), (SELECT status FROM messages WHERE id = $2)`,
		j.Inline[0].ID, j.Inline[1].ID).Scan(&marked, &other); err != nil {
		t.Fatal(err)
	}
	if marked != "queued" || other != "failed" {
		t.Errorf("after the cancel the marked message is %s, the other %s; want queued and failed", marked, other)
	}
	if w, _ := st.Wallet(ctx, acct); w.BalanceCents != 950 {
		t.Errorf("balance %d; want 950 (the unmarked message refunded, the marked one not)", w.BalanceCents)
	}
}

// A message written long after its job was accepted (a scheduled campaign's, a large send's)
// has the acceptance time for its created_at and a later id: a date range on created_at finds
// it, however late its row was written.
func TestDateRangeFindsMessagesWrittenLater(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	j := job(acct, 50)
	rs := []persistence.Recipient{{NSN: 712345678, Network: carriers.Safaricom}}
	j.Inline, j.Pending = nil, persistence.EncodeRecipients(rs)
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var accepted time.Time // as if accepted two days before its rows are written
	if err := conn.QueryRow(ctx, `UPDATE jobs SET created_at = created_at - interval '2 days' WHERE id = $1 RETURNING created_at`,
		j.ID).Scan(&accepted); err != nil {
		t.Fatal(err)
	}
	m := persistence.NewMessage{ID: persistence.NewID(), Recipient: rs[0].E164(), Network: carriers.Safaricom, Sender: "TUMA",
		Parts: 1, Encoding: carriers.GSM7, CostCents: 50}
	if ok, err := st.ExpandJob(ctx, j, 0, []persistence.NewMessage{m}, true); err != nil || !ok {
		t.Fatalf("expand: %v %v", ok, err)
	}
	from, to := accepted.Truncate(24*time.Hour), accepted.Truncate(24*time.Hour).Add(24*time.Hour)
	list, total, err := st.ListMessages(ctx, acct, persistence.MessageFilter{From: &from, To: &to}, persistence.Page{Number: 1, Size: 10})
	if err != nil || total != 1 || len(list) != 1 || list[0].ID != m.ID {
		t.Fatalf("messages of %s: %d listed, total %d, %v; want the one written two days later", from.Format(time.DateOnly), len(list), total, err)
	}
}

// v7At is a UUIDv7 of the time t (random below the millisecond), as a row written then has.
func v7At(t time.Time) uuid.UUID {
	id := uuid.Must(uuid.NewV7())
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	return id
}

// A date range lists, newest first and paged, both the rows written when their send was
// accepted and the rows of a job expanded days later, and counts them once each; the
// reference filter applies to both.
func TestDateRangeMergesRowsWrittenLater(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	accepted := time.Now().Add(-48 * time.Hour).Truncate(time.Millisecond)
	ref := "late-ref"
	late := job(acct, 50)
	rs := []persistence.Recipient{{NSN: 712345678, Network: carriers.Safaricom}}
	late.Inline, late.Pending, late.Reference = nil, persistence.EncodeRecipients(rs), &ref
	// Written when accepted, two days ago: its row's id is of then.
	early := job(acct, 50)
	early.Inline[0].ID = v7At(accepted.Add(time.Minute))
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{late, early}); err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	if _, err := conn.Exec(ctx, `UPDATE jobs SET created_at = $2 WHERE id = $1`, late.ID, accepted); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE messages SET created_at = $2 WHERE job_id = $1`, early.ID, accepted.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	m := persistence.NewMessage{ID: persistence.NewID(), Recipient: rs[0].E164(), Network: carriers.Safaricom, Sender: "TUMA",
		Parts: 1, Encoding: carriers.GSM7, CostCents: 50}
	if ok, err := st.ExpandJob(ctx, late, 0, []persistence.NewMessage{m}, true); err != nil || !ok {
		t.Fatalf("expand: %v %v", ok, err)
	}
	from, to := accepted.Truncate(24*time.Hour), accepted.Truncate(24*time.Hour).Add(48*time.Hour)
	var got []uuid.UUID
	for page := 1; page <= 3; page++ {
		list, total, err := st.ListMessages(ctx, acct, persistence.MessageFilter{From: &from, To: &to}, persistence.Page{Number: page, Size: 1})
		if err != nil || total != 2 {
			t.Fatalf("page %d: total %d, %v; want 2", page, total, err)
		}
		for _, x := range list {
			got = append(got, x.ID)
		}
	}
	if len(got) != 2 || got[0] != m.ID || got[1] != early.Inline[0].ID {
		t.Errorf("pages listed %v; want the row written later (%s), then the one written at acceptance (%s)", got, m.ID, early.Inline[0].ID)
	}
	list, total, err := st.ListMessages(ctx, acct, persistence.MessageFilter{From: &from, To: &to, Reference: &ref}, persistence.Page{Number: 1, Size: 10})
	if err != nil || total != 1 || len(list) != 1 || list[0].ID != m.ID {
		t.Errorf("by reference: %d listed, total %d, %v; want the late job's one", len(list), total, err)
	}
}
