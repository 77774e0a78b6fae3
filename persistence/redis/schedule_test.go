package redis_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

// Three nodes taking slots of one 100/s schedule at once: together they keep to the rate in
// every second, the slots they get never coincide, and none starves.
func TestScheduleKeepsNodesToOneRate(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	ctx := context.Background()
	const every, horizon, run = 10 * time.Millisecond, 200 * time.Millisecond, 2 * time.Second
	var mu sync.Mutex
	var slots []time.Time
	perNode := make([]int, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range perNode {
		// Patient clients: a busy machine must not make a slow answer look like an outage,
		// which would leave a node pacing on its own (the test measures the shared schedule).
		c, err := redis.New(ctx, redis.Options{URL: url, Prefix: prefix, CommandTimeout: 2 * time.Second, CheckInterval: time.Second},
			slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		s := redis.NewSchedule(c)
		wg.Go(func() {
			for time.Since(start) < run {
				n, first, err := s.Reserve(ctx, "safaricom", every, 5, horizon)
				if err != nil {
					t.Error(err)
					return
				}
				at := time.Now().Add(first)
				mu.Lock()
				for k := range n {
					slots = append(slots, at.Add(time.Duration(k)*every))
				}
				perNode[i] += n
				mu.Unlock()
				if n == 0 {
					time.Sleep(first)
					continue
				}
				time.Sleep(time.Until(at.Add(time.Duration(n-1) * every))) // use them, as a link does
			}
		})
	}
	wg.Wait()
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	for i := range slots {
		// No more than 100 slots (+2 for the clock read around each round trip) in any second.
		j, _ := slices.BinarySearchFunc(slots, slots[i].Add(time.Second), func(a, b time.Time) int { return a.Compare(b) })
		if j-i > 102 {
			t.Fatalf("%d slots within a second from %s; want ≤ 100 (+2)", j-i, slots[i].Sub(start))
		}
	}
	total := len(slots)
	if want := int(run/every) * 9 / 10; total < want {
		t.Fatalf("%d slots over %s at 100/s; want ≥ %d (the nodes must not leave the rate unused)", total, run, want)
	}
	for i, n := range perNode {
		if n < total/6 {
			t.Fatalf("node %d got %d of %d slots; want a fair share (≥ 1/6)", i, n, total)
		}
	}
}

// Slots follow on from the last one handed out, never more than the horizon ahead.
func TestScheduleHorizon(t *testing.T) {
	s := redis.NewSchedule(newClient(t, redistest.URL(t), redistest.Prefix()))
	ctx := context.Background()
	n, first, err := s.Reserve(ctx, "airtel", 100*time.Millisecond, 50, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n != 10 || first > 5*time.Millisecond {
		t.Fatalf("first reserve: %d slots from %s; want 10 (a second's worth at 10/s) from now", n, first)
	}
	n, first, err = s.Reserve(ctx, "airtel", 100*time.Millisecond, 50, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || first <= 0 || first > 100*time.Millisecond {
		t.Fatalf("second reserve: %d slots, ask again in %s; want none, and again within one slot", n, first)
	}
	if _, _, err := s.Reserve(ctx, "airtel", 0, 1, time.Second); err == nil {
		t.Fatal("a zero spacing was accepted")
	}
}

func TestScheduleWithoutRedis(t *testing.T) {
	s := redis.NewSchedule(newClient(t, "redis://127.0.0.1:1", redistest.Prefix()))
	if _, _, err := s.Reserve(context.Background(), "telkom", time.Millisecond, 1, time.Second); !errors.Is(err, redis.ErrUnavailable) {
		t.Fatalf("err = %v; want ErrUnavailable", err)
	}
}
