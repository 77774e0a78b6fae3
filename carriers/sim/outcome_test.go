package sim

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/tuma-sms/tuma/carriers"
)

func TestOutcomeMix(t *testing.T) {
	const submits = 20000
	tests := []struct {
		name   string
		weight [4]float64 // delivered, undeliverable, expired, rejected
		want   [4]float64
	}{
		{"70/10/10/10", [4]float64{70, 10, 10, 10}, [4]float64{0.7, 0.1, 0.1, 0.1}},
		{"all zero", [4]float64{}, [4]float64{1, 0, 0, 0}},
		{"only expired", [4]float64{0, 0, 3, 0}, [4]float64{0, 0, 1, 0}},
		{"half undeliverable", [4]float64{1, 1, 0, 0}, [4]float64{0.5, 0.5, 0, 0}},
	}
	statuses := [4]string{"DELIVRD", "UNDELIV", "EXPIRED", "REJECTD"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNetwork(t, Options{
				Network:   carriers.Telkom,
				Delivered: tt.weight[0], Undeliverable: tt.weight[1], Expired: tt.weight[2], Rejected: tt.weight[3],
				Seed: 42,
			})
			var counts [4]int
			for range submits {
				id, err := n.Submit(context.Background(), submission())
				if err != nil {
					t.Fatalf("Submit = %v", err)
				}
				r, err := n.Query(context.Background(), id)
				if err != nil {
					t.Fatalf("Query(%q) = %v", id, err)
				}
				for i, s := range statuses {
					if r.ProviderStatus == s {
						counts[i]++
					}
				}
				if (r.State == Delivered) != (r.ProviderStatus == "DELIVRD") || r.State == Enroute {
					t.Fatalf("Query(%q) = %+v; want a final state matching its status", id, r)
				}
			}
			for i, c := range counts {
				if got := float64(c) / submits; math.Abs(got-tt.want[i]) > 0.015 {
					t.Errorf("%s share = %.3f; want %.3f ± 0.015", statuses[i], got, tt.want[i])
				}
			}
		})
	}
}

func TestRates(t *testing.T) {
	const submits = 20000
	tests := []struct {
		name                      string
		opts                      Options
		throttled, temporary, rej float64 // expected shares of all submits
	}{
		{"failure", Options{FailureRate: 0.3}, 0, 0.3, 0},
		{"reject", Options{RejectRate: 0.2}, 0, 0, 0.2},
		{"throttle", Options{ThrottleRate: 0.25}, 0.25, 0, 0},
		{"all", Options{ThrottleRate: 0.2, FailureRate: 0.25, RejectRate: 0.1}, 0.2, 0.8 * 0.25, 0.8 * 0.75 * 0.1},
		{"failure always", Options{FailureRate: 1, RejectRate: 1}, 0, 1, 0},
		{"none", Options{}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Network, opts.Seed = carriers.Safaricom, 7
			n := newNetwork(t, opts)
			var throttled, temporary, rejected, accepted int
			for range submits {
				_, err := n.Submit(context.Background(), submission())
				switch {
				case err == nil:
					accepted++
				case errors.Is(err, ErrThrottled):
					throttled++
				case errors.Is(err, ErrTemporary):
					temporary++
				case errors.Is(err, ErrRejected):
					rejected++
				default:
					t.Fatalf("Submit = %v", err)
				}
			}
			check := func(what string, got int, want float64) {
				t.Helper()
				if share := float64(got) / submits; math.Abs(share-want) > 0.015 {
					t.Errorf("%s share = %.3f; want %.3f ± 0.015", what, share, want)
				}
			}
			check("throttled", throttled, tt.throttled)
			check("temporary", temporary, tt.temporary)
			check("rejected", rejected, tt.rej)
			want := Stats{
				Submits: submits, Accepted: uint64(accepted), Throttled: uint64(throttled),
				Temporary: uint64(temporary), Rejected: uint64(rejected),
			}
			got := n.Stats()
			got.MaxRate = 0
			if got != want {
				t.Errorf("Stats() = %+v; want %+v", got, want)
			}
		})
	}
}

func TestSeedMakesDrawsRepeatable(t *testing.T) {
	run := func() []string {
		n := newNetwork(t, Options{Network: carriers.Safaricom, Seed: 99, FailureRate: 0.5, Delivered: 1, Expired: 1})
		var got []string
		for range 200 {
			id, err := n.Submit(context.Background(), submission())
			switch {
			case err != nil:
				got = append(got, err.Error())
			default:
				got = append(got, string(id[1])) // the outcome letter
			}
		}
		return got
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("submit %d: %q then %q with the same seed", i, a[i], b[i])
		}
	}
}
