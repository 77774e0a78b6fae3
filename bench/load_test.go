package bench

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// TestNumbersAreTheirNetworks: every pooled number is a valid Kenyan mobile of the network it
// is meant for, and a window is a valid send body with distinct recipients.
func TestNumbersAreTheirNetworks(t *testing.T) {
	plan := carriers.DefaultPlan()
	for _, n := range carriers.Networks() {
		p := newNumbers(prefixes(n), 1000)
		var body struct {
			Recipients []string `json:"recipients"`
			Message    string   `json:"message"`
		}
		if err := json.Unmarshal(p.body(nil, 0, 1000), &body); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		seen := map[string]bool{}
		for _, r := range body.Recipients {
			num, err := plan.Normalize(r)
			if err != nil || num.Network != n {
				t.Fatalf("%s: %s is %v (%v)", n, r, num.Network, err)
			}
			if seen[num.E164] {
				t.Fatalf("%s: %s twice", n, r)
			}
			seen[num.E164] = true
		}
		if len(seen) != 1000 || body.Message != benchMessage {
			t.Errorf("%s: %d distinct, message %q", n, len(seen), body.Message)
		}
	}
	mix := newNumbers(mixPrefixes(), poolSize(10_000))
	nets := map[carriers.Network]int{}
	var body struct{ Recipients []string }
	buf := mix.body(nil, mix.count-3, 8) // wraps to the start
	if err := json.Unmarshal(buf, &body); err != nil || len(body.Recipients) != 8 {
		t.Fatalf("wrapped window: %v, %q", err, buf)
	}
	for _, r := range body.Recipients {
		num, err := plan.Normalize(r)
		if err != nil {
			t.Fatal(err)
		}
		nets[num.Network]++
	}
	if nets[carriers.Safaricom] != 5 || nets[carriers.Airtel] != 2 || nets[carriers.Telkom] != 1 {
		t.Errorf("8 consecutive mixed numbers by network = %v; want 5/2/1", nets)
	}
}

func TestBacklogPlan(t *testing.T) {
	ts := []*tenant{{id: "a"}, {id: "b"}, {id: "c"}, {id: "d"}, {id: "e"}, {id: "f"}}
	caps, err := ParseCaps("safaricom=100,airtel=50,telkom=20")
	if err != nil {
		t.Fatal(err)
	}
	l := &loader{cfg: Config{Caps: caps, Duration: 15 * time.Second, Recipients: 10_000}, tenants: ts}
	total := map[carriers.Network]int{}
	byTenant := map[*tenant]carriers.Network{}
	for _, s := range l.backlog() {
		total[s.network] += s.n
		if s.n > int(2*caps[s.network]) {
			t.Errorf("send of %d to %s: want at most 2 s of its egress", s.n, s.network)
		}
		if prev, ok := byTenant[s.tenant]; ok && prev != s.network {
			t.Errorf("account %s sends to %s and %s", s.tenant.id, prev, s.network)
		}
		byTenant[s.tenant] = s.network
	}
	if total[carriers.Safaricom] != 1500 || total[carriers.Airtel] != 750 || total[carriers.Telkom] != 300 {
		t.Errorf("backlog = %v; want cap × 15 s per network", total)
	}
}

func TestPaceCountsMissedSends(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	ticks := make(chan struct{}, 5)
	var missed atomic.Int64
	pace(ctx, time.Now(), 100, ticks, &missed) // nobody takes the ticks
	n := 0
	for range ticks {
		n++
	}
	// 300 ms at 100/s offers about 30: 5 fit the buffer, the rest are missed, none queued.
	if n != 5 || missed.Load() < 20 || missed.Load() > 35 {
		t.Errorf("taken %d, missed %d", n, missed.Load())
	}
}

func TestMixedSizes(t *testing.T) {
	l := &loader{cfg: Config{Scenario: ScenarioMixed, Recipients: 5000}}
	size := l.sizer()
	r := rand.New(rand.NewPCG(1, 1))
	var single, bulk int
	for range 10_000 {
		switch n := size(r); {
		case n == 1:
			single++
		case n >= 100 && n <= 5000:
			bulk++
		default:
			t.Fatalf("size %d", n)
		}
	}
	if bulk < 850 || bulk > 1150 {
		t.Errorf("%d bulk sends in 10,000; want about 10%%", bulk)
	}
	l.cfg.Scenario = ScenarioBulk
	if n := l.sizer()(r); n != 5000 {
		t.Errorf("bulk size = %d", n)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q; want %q", n, got, want)
		}
	}
	if bar(0.5) != "[##########..........]" || bar(2) != "[####################]" || bar(-1) != "[....................]" {
		t.Error("bar")
	}
}

// Refused with a Retry-After, a client waits before it asks again, as the API asks: one
// client against a node answering every send 503 with Retry-After: 1 asks about once a
// second, not the hundreds of times a second it did, each counted as a refusal.
func TestRefusedClientsWaitRetryAfter(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"code":"overloaded"}`))
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Concurrency: 1, Scenario: ScenarioSmall, Recipients: 1, Duration: time.Minute, RequestTimeout: 5 * time.Second}
	l := &loader{cfg: cfg, api: newAPI(cfg), tenants: []*tenant{{id: "a", key: "k"}}, live: &live{}, messages: newNumbers(mixPrefixes(), 100)}
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	res := l.run(ctx)
	if res.s5xx < 1 || res.s5xx > 2 || res.codes["503 overloaded"] != res.s5xx || asked.Load() != res.s5xx {
		t.Fatalf("%d sends refused (%v), %d asked in 1.5 s with Retry-After: 1; want 1 or 2", res.s5xx, res.codes, asked.Load())
	}
	for _, c := range []struct {
		status int
		header string
		want   time.Duration
	}{
		{503, "1", time.Second}, {429, "3", 3 * time.Second}, {429, "3600", maxRetryAfter},
		{503, "", 0}, {503, "soon", 0}, {503, "-1", 0}, {500, "1", 0}, {202, "1", 0},
	} {
		if got := retryAfter(c.status, []byte(c.header)); got != c.want {
			t.Errorf("retryAfter(%d, %q) = %v; want %v", c.status, c.header, got, c.want)
		}
	}
}
