package persistence_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// BenchmarkFlushWebhookEvents measures what the outbox costs the status flushes: 1,000
// messages of one account submitted in one flush and delivered in the next, with no webhook
// endpoint and with one subscribed to message.sent and message.delivered (2,000 events written).
// Each run reports the flushes' time per message.
//
//	go test -run '^$' -bench FlushWebhookEvents -benchtime 30x ./persistence/
func BenchmarkFlushWebhookEvents(b *testing.B) {
	for _, subscribed := range []bool{false, true} {
		b.Run(fmt.Sprintf("subscribed=%v", subscribed), func(b *testing.B) {
			st, _ := pgtest.NewStore(b)
			ctx := context.Background()
			key := sha256.Sum256([]byte(b.Name()))
			a, err := st.CreateAccount(ctx, persistence.NewAccount{Email: uuid.NewString() + "@example.com", PasswordHash: "x",
				FullName: "Bench", CompanyName: "Bench", APIKeyHash: key[:], APIKeyPrefix: "sk_live_bench"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.Credit(ctx, persistence.NewCredit{AccountID: a.ID, Cents: 1 << 40, Type: persistence.TxTopup, Description: "bench"}); err != nil {
				b.Fatal(err)
			}
			if subscribed {
				if _, _, err := st.CreateWebhook(ctx, persistence.NewWebhook{AccountID: a.ID, URL: "https://example.com/h",
					Events: []string{"message.sent", "message.delivered"}, BatchSize: 100}); err != nil {
					b.Fatal(err)
				}
			}
			const n = 1000
			events := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j := persistence.NewJob{ID: persistence.NewID(), AccountID: a.ID, Source: "api", Message: "bench", PriceCents: 1,
					Recipients: n, Units: n, CostCents: n, Senders: [carriers.NetworkSlots]string{"", "TUMA", "TUMA", "TUMA"}}
				j.NetworkCounts[carriers.Telkom] = n
				var subs persistence.ReceiptBatch
				var recs persistence.ReceiptBatch
				for k := 0; k < n; k++ {
					m := persistence.NewMessage{ID: persistence.NewID(), Recipient: fmt.Sprintf("+25477%07d", k), Network: carriers.Telkom,
						Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 1}
					j.Inline = append(j.Inline, m)
					pid := fmt.Sprintf("b%d-%d", i, k)
					subs.Submitted = append(subs.Submitted, persistence.Submitted{AccountID: a.ID, MessageID: m.ID, ProviderID: pid,
						Network: carriers.Telkom, At: time.Now()})
					recs.Receipts = append(recs.Receipts, persistence.Receipt{ProviderID: pid, Network: carriers.Telkom, Delivered: true,
						ProviderStatus: "DELIVRD", At: time.Now(), AccountID: a.ID, MessageID: m.ID})
				}
				if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
					b.Fatalf("accept: %v %+v", err, res)
				}
				b.StartTimer()
				for _, rb := range []persistence.ReceiptBatch{subs, recs} {
					res, err := st.FlushReceipts(ctx, rb)
					if err != nil {
						b.Fatal(err)
					}
					events += res.WebhookEvents
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1000, "µs/msg")
			b.ReportMetric(float64(events)/float64(b.N*n), "events/msg")
		})
	}
}
