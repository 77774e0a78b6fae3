package actors_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// coldMarks makes the engine's mark writes slow at first: a cold database, a checkpoint.
type coldMarks struct {
	actors.Store
	slowUntil time.Time
	delay     time.Duration
}

func (s *coldMarks) MarkBatches(ctx context.Context, node string, b []persistence.MarkBatch) ([]map[persistence.FenceKey]bool, error) {
	if time.Now().Before(s.slowUntil) {
		time.Sleep(s.delay)
	}
	return s.Store.MarkBatches(ctx, node, b)
}

// submitClock notes when each submit reached the network.
type submitClock struct {
	actors.Carrier
	mu sync.Mutex
	at []time.Time
}

func (c *submitClock) Submit(ctx context.Context, m actors.Outgoing) (string, error) {
	c.mu.Lock()
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	return c.Carrier.Submit(ctx, m)
}

// busiestSecond is the most submits in any one second (a sliding window), and when it began.
func (c *submitClock) busiestSecond() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	most, from, j := 0, time.Time{}, 0
	for i, t := range c.at {
		for c.at[j].Before(t.Add(-time.Second)) || c.at[j].Equal(t.Add(-time.Second)) {
			j++
		}
		if n := i - j + 1; n > most {
			most, from = n, c.at[j]
		}
	}
	return most, from
}

// A link keeps its network's rate where the submits reach the network: submits whose marks
// took long to write (the first write of a link is cold) do not go out together on top of
// the rate's next ones. They once did: a slot was taken when a submit was marked, and a
// slow mark released several slots' submits at once (the cluster-tps drill's 107 in a
// second for a cap of 100); nor does the time a link waited for a mark come out as a burst.
func TestASlowMarkDoesNotBunchSubmitsOverTheCap(t *testing.T) {
	const tps = 50
	clock := &submitClock{}
	w := newWorldWith(t, paced("", tps), nil, func(w *world) {
		w.store = &coldMarks{Store: w.st, slowUntil: time.Now().Add(2 * time.Second), delay: 400 * time.Millisecond}
		w.wrap = func(cs map[carriers.Network]actors.Carrier) map[carriers.Network]actors.Carrier {
			clock.Carrier = cs[carriers.Safaricom]
			cs[carriers.Safaricom] = clock
			return cs
		}
	})
	acct := w.account(1000_00)
	const total = 200
	if _, err := w.send(acct, recipients(total, carriers.Safaricom, 21), "paced"); err != nil {
		t.Fatal(err)
	}
	c := w.waitFinal(acct, total, time.Minute)
	if c.Delivered != total {
		t.Fatalf("counts %+v; want all %d delivered", c, total)
	}
	// Slots are taken as submits go, and the clock here reads in the carrier's goroutines:
	// 10 % over the cap at most. Bunched, it was 91.
	most, from := clock.busiestSecond()
	if most > tps*110/100 {
		t.Fatalf("%d submits in the second from %s; want at most the cap, %d, and 10 %%", most, from.Format("15:04:05.000"), tps)
	}
	if len(clock.at) != total {
		t.Errorf("%d submits for %d messages", len(clock.at), total)
	}
	t.Logf("busiest second: %d submits (cap %d) over %s", most, tps, fmt.Sprint(clock.at[len(clock.at)-1].Sub(clock.at[0]).Round(time.Millisecond)))
}
