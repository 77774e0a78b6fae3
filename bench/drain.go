package bench

import (
	"context"
	"sync"
	"time"
)

// drainPoll is how often pending accounts' statistics are read.
const drainPoll = 200 * time.Millisecond

// drainPollers bounds the statistics reads in flight, so draining does not load the server.
const drainPollers = 8

// drainResult is the end of a run: every account's last statistics.
type drainResult struct {
	drained     bool      // every accepted message reached a final state
	at          time.Time // when the last account was seen final
	stats       messageStats
	unconfirmed int64 // messages the server holds beyond what its 202s told the tool
	pollErrors  int64
}

// drain polls each account's GET /sms/stats until its messages are all final (queued and sent
// both 0, and as many as the tool saw accepted), or until deadline. An account once final stays
// final (nothing more is sent to it), so it is not read again. The server's counts may trail by
// up to about a second, so `at` may be that late.
func drain(ctx context.Context, a *api, tenants []*tenant, deadline time.Time, lv *live) drainResult {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	last := make([]messageStats, len(tenants))
	final := make([]bool, len(tenants))
	var res drainResult
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, drainPollers)
		for i, t := range tenants {
			if final[i] {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				s, err := a.stats(ctx, t)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if ctx.Err() == nil {
						res.pollErrors++
					}
					return
				}
				last[i] = s
				final[i] = s.Queued == 0 && s.Sent == 0 && s.Total >= t.accepted.Load()
			})
		}
		wg.Wait()
		var done int
		var sum messageStats
		for i, s := range last {
			sum.Total += s.Total
			sum.Delivered += s.Delivered
			sum.Sent += s.Sent
			sum.Failed += s.Failed
			sum.Queued += s.Queued
			if final[i] {
				done++
			}
		}
		lv.final.Store(sum.Delivered + sum.Failed)
		res.stats = sum
		if done == len(tenants) {
			res.drained, res.at = true, time.Now()
			for i, t := range tenants {
				res.unconfirmed += max(0, last[i].Total-t.accepted.Load())
			}
			return res
		}
		select {
		case <-ctx.Done():
			return res
		case <-tick.C:
		}
	}
}
