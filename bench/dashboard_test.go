package bench

import (
	"io"
	"testing"
	"time"
)

func TestServerTiming(t *testing.T) {
	for h, want := range map[string]time.Duration{
		"app;dur=3.5, total;dur=4.25": 4250 * time.Microsecond,
		`db;desc="store";dur=12`:      12 * time.Millisecond,
		"total;dur=0":                 0,
	} {
		if got, ok := serverTiming(h); !ok || got != want {
			t.Errorf("serverTiming(%q) = %v, %v; want %v", h, got, ok, want)
		}
	}
	if _, ok := serverTiming("cache;desc=hit"); ok {
		t.Error("a header without dur gave a figure")
	}
}

func TestParseDashboardArgs(t *testing.T) {
	env := func(k string) (string, bool) {
		return map[string]string{"TUMA_DATABASE_URL": "postgres://x/y"}[k], k == "TUMA_DATABASE_URL"
	}
	none := func(string) (string, bool) { return "", false }
	c, err := ParseDashboardArgs([]string{"--reads", "7"}, env, io.Discard)
	if err != nil || c.DatabaseURL != "postgres://x/y" || c.Reads != 7 || c.Messages != 1_000_000 || c.Contacts != 100_000 {
		t.Fatalf("ParseDashboardArgs = %+v, %v", c, err)
	}
	if _, err := ParseDashboardArgs(nil, none, io.Discard); err == nil {
		t.Error("no database and nothing to reuse: accepted")
	}
	if c, err := ParseDashboardArgs([]string{"--reuse", "a@example.com"}, none, io.Discard); err != nil || c.Reuse != "a@example.com" {
		t.Errorf("--reuse without a database = %+v, %v", c, err)
	}
	if _, err := ParseDashboardArgs([]string{"--contacts", "10"}, env, io.Discard); err == nil {
		t.Error("--contacts 10 accepted")
	}
}

// Ids made at later times sort later, as the node's UUIDv7 do.
func TestV7AtSortsByTime(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a, b := v7At(t0), v7At(t0.Add(time.Millisecond))
	if a.String() >= b.String() || a.Version() != 7 || a.Variant().String() != "RFC4122" {
		t.Errorf("v7At: %s then %s", a, b)
	}
}
