package persistence_test

import (
	"context"
	"testing"
	"time"

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
