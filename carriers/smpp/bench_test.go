package smpp

import (
	"context"
	"sync"
	"testing"
)

// BenchmarkBindSubmit is one bind with a window of 100 against the simulated SMSC in this
// process (both sides' CPU counted): submit_sm to submit_sm_resp, receipts on.
func BenchmarkBindSubmit(b *testing.B) {
	smsc := startSMSC(b, SMSCConfig{ReceiptTLVs: true})
	bind := testBind(b, smsc.Addr(), nil, BindHooks{})
	waitBound(b, bind)
	var wg sync.WaitGroup
	work := make(chan struct{}, 1024)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if _, err := bind.Submit(context.Background(), submitPDU("254712345678", "Habari, your order has shipped")); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	b.ResetTimer()
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
}
