package persistence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// The backlog shrinks message by message as they become final, not only when whole jobs
// complete: one job's messages on three networks, one delivered, one failed, one still sent.
func TestBacklogShrinksAsMessagesFinish(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	j := job(acct, 300)
	j.Recipients, j.Units, j.CostCents = 3, 3, 300
	j.Inline = nil
	for i, net := range carriers.Networks() {
		j.Inline = append(j.Inline, persistence.NewMessage{ID: persistence.NewID(), Recipient: []string{"+254712345678", "+254733123456", "+254777123456"}[i],
			Network: net, Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 100})
		j.NetworkCounts[net] = 1
	}
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	backlog := func() persistence.Backlog {
		t.Helper()
		for {
			res, err := st.FoldProgress(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if res.Entries == 0 {
				break
			}
		}
		b, err := st.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := backlog(); b[carriers.Safaricom] != 1 || b[carriers.Airtel] != 1 || b[carriers.Telkom] != 1 {
		t.Fatalf("backlog %v after acceptance; want one message on each network", b)
	}
	now := time.Now()
	var subs []persistence.Submitted
	for i, m := range j.Inline {
		subs = append(subs, persistence.Submitted{AccountID: acct, MessageID: m.ID, ProviderID: "p" + string(rune('a'+i)), Network: m.Network, At: now})
	}
	if _, err := st.FlushReceipts(ctx, persistence.ReceiptBatch{Submitted: subs}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FlushReceipts(ctx, persistence.ReceiptBatch{Receipts: []persistence.Receipt{
		{ProviderID: "pa", Network: carriers.Safaricom, Delivered: true, ProviderStatus: "DELIVRD", At: now},
		{ProviderID: "pb", Network: carriers.Airtel, Delivered: false, ProviderStatus: "UNDELIV", At: now},
	}}); err != nil {
		t.Fatal(err)
	}
	if b := backlog(); b[carriers.Safaricom] != 0 || b[carriers.Airtel] != 0 || b[carriers.Telkom] != 1 {
		t.Errorf("backlog %v after one delivery and one failure; want only Telkom's message left", b)
	}
}

// A 1-recipient job outside a campaign closes when its message is final without its jobs row
// being updated (migration 032); a job of two is folded as before; the account's counts move
// for both, and a single job whose message is only sent stays open.
func TestSingleJobsCloseWithoutFold(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	single, open := job(acct, 100), job(acct, 100)
	open.Inline[0].Recipient = "+254712345679"
	pair := job(acct, 200)
	pair.Recipients, pair.Units = 2, 2
	pair.Inline = append(pair.Inline, persistence.NewMessage{ID: persistence.NewID(), Recipient: "+254733123456",
		Network: carriers.Airtel, Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 100})
	pair.Inline[0].CostCents = 100
	pair.NetworkCounts[carriers.Safaricom], pair.NetworkCounts[carriers.Airtel] = 1, 1
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{single, open, pair}); err != nil || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	now := time.Now()
	var subs []persistence.Submitted
	for i, m := range []persistence.NewMessage{single.Inline[0], open.Inline[0], pair.Inline[0], pair.Inline[1]} {
		subs = append(subs, persistence.Submitted{AccountID: acct, MessageID: m.ID, ProviderID: fmt.Sprint("p", i), Network: m.Network, At: now})
	}
	if _, err := st.FlushReceipts(ctx, persistence.ReceiptBatch{Submitted: subs}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FlushReceipts(ctx, persistence.ReceiptBatch{Receipts: []persistence.Receipt{
		{ProviderID: "p0", Network: carriers.Safaricom, Delivered: true, ProviderStatus: "DELIVRD", At: now},
		{ProviderID: "p2", Network: carriers.Safaricom, Delivered: true, ProviderStatus: "DELIVRD", At: now},
		{ProviderID: "p3", Network: carriers.Airtel, Delivered: false, ProviderStatus: "UNDELIV", At: now},
	}}); err != nil {
		t.Fatal(err)
	}
	completed := map[uuid.UUID]bool{}
	for {
		res, err := st.FoldProgress(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range res.Completed {
			completed[id] = true
		}
		if res.Entries == 0 {
			break
		}
	}
	if len(completed) != 2 || !completed[single.ID] || !completed[pair.ID] {
		t.Errorf("completed %v; want the single job %s and the pair %s", completed, single.ID, pair.ID)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var openIDs []uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(job_id), '{}') FROM open_jobs`).Scan(&openIDs); err != nil {
		t.Fatal(err)
	}
	if len(openIDs) != 1 || openIDs[0] != open.ID {
		t.Errorf("open jobs %v; want only %s, whose message is sent", openIDs, open.ID)
	}
	var status string
	var delivered, failed int
	var refunded int64
	if err := conn.QueryRow(ctx, `SELECT status, delivered_count, failed_count, refunded_cents FROM jobs WHERE id = $1`, single.ID).
		Scan(&status, &delivered, &failed, &refunded); err != nil || status == "completed" || delivered != 0 {
		t.Errorf("single job's row: %s, delivered %d, %v; want it as accepted", status, delivered, err)
	}
	if err := conn.QueryRow(ctx, `SELECT status, delivered_count, failed_count, refunded_cents FROM jobs WHERE id = $1`, pair.ID).
		Scan(&status, &delivered, &failed, &refunded); err != nil || status != "completed" || delivered != 1 || failed != 1 || refunded != 100 {
		t.Errorf("pair's row: %s, delivered %d, failed %d, refunded %d, %v; want completed, 1, 1, 100", status, delivered, failed, refunded, err)
	}
	var sent, deliv, fail int64
	if err := conn.QueryRow(ctx, `SELECT sent, delivered, failed FROM message_counts WHERE account_id = $1`, acct).
		Scan(&sent, &deliv, &fail); err != nil || sent != 1 || deliv != 2 || fail != 1 {
		t.Errorf("account counts sent %d, delivered %d, failed %d, %v; want 1, 2, 1", sent, deliv, fail, err)
	}
}
