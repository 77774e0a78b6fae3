package sim

import (
	"context"
	"math"
	"testing"

	"github.com/tuma-sms/tuma/carriers"
)

func TestIDRoundTrip(t *testing.T) {
	tests := []idFields{
		{network: carriers.Safaricom, outcome: outDelivered, submitMs: 1767225600000, tag: 0, delayMs: 0, seq: 1},
		{network: carriers.Airtel, outcome: outUndeliverable, submitMs: 1767225600123, tag: tagSpace - 1, delayMs: 1500, seq: 123456},
		{network: carriers.Telkom, outcome: outExpired, submitMs: 0, tag: 77, delayMs: maxDelayMs, seq: math.MaxUint64},
		{network: carriers.Telkom, outcome: outRejected, submitMs: 1<<45 - 1, tag: 1, delayMs: 1, seq: 32},
	}
	for _, f := range tests {
		id := f.format()
		if len(id) < minIDLen || len(id) >= 40 {
			t.Errorf("format(%+v) = %q, %d chars; want %d to 39", f, id, len(id), minIDLen)
		}
		for i := 0; i < len(id); i++ {
			if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
				t.Errorf("format(%+v) = %q; want only [0-9a-z-]", f, id)
			}
		}
		if got, ok := parseID(id); !ok || got != f {
			t.Errorf("parseID(%q) = %+v, %t; want %+v", id, got, ok, f)
		}
	}
}

func TestIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, net := range []carriers.Network{carriers.Safaricom, carriers.Safaricom, carriers.Airtel, carriers.Telkom} {
		// Same seed everywhere: the instance tag alone keeps ids apart.
		n := newNetwork(t, Options{Network: net, Seed: 1})
		for range 1000 {
			id, err := n.Submit(context.Background(), submission())
			if err != nil {
				t.Fatalf("Submit = %v", err)
			}
			if seen[id] {
				t.Fatalf("id %q issued twice", id)
			}
			seen[id] = true
			if len(id) >= 40 {
				t.Errorf("id %q has %d chars; want < 40", id, len(id))
			}
		}
	}
}
