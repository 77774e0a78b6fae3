package actors_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
)

// Sends that wait for a dispatch slot keep their messages in memory only within the node's
// WaitingInline budget (TUMA_WAITING_MESSAGES); past it, or with none (negative), a waiting
// send reads its messages back when its turn comes. Either way every message goes once and the
// ledger is exact.
func TestWaitingSendsWithinAndPastTheirBudget(t *testing.T) {
	for _, budget := range []int64{-1, 5, 0} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			w := newWorld(t, actors.Options{MaxDispatchingJob: 1, WaitingInline: budget}, nil)
			acct := w.account(1000_00)
			const sends = 60
			var wg sync.WaitGroup
			errs := make(chan error, sends)
			for i := range sends {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := w.send(acct, recipients(1, carriers.NetworkUnknown, uint64(i+1)), "Hello from Tuma"); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			c := w.waitFinal(acct, sends, 30*time.Second)
			if c.Delivered+c.Failed != sends {
				t.Errorf("counts %+v; want %d final", c, sends)
			}
			if n := w.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1 AND provider_message_id IS NOT NULL`, acct); n != sends {
				t.Errorf("%d messages submitted; want each of %d once", n, sends)
			}
			refunds := w.sqlInt(`SELECT coalesce(sum(cost_cents), 0) FROM messages WHERE account_id = $1 AND status = 'failed'`, acct)
			if got, want := w.balance(acct), int64(1000_00-sends*50)+refunds; got != want {
				t.Errorf("balance %d; want %d (refunds %d)", got, want, refunds)
			}
		})
	}
}
