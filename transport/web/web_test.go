package web

import (
	"strings"
	"testing"
)

func TestSafeNextStaysOnTheDashboard(t *testing.T) {
	for in, want := range map[string]string{
		"/app/notifications":         "/app/notifications",
		"/app/?verified=1":           "/app/?verified=1",
		"/app/messages?status=x&p=2": "/app/messages?status=x&p=2",
		"":                           "/app/",
		"/docs":                      "/app/",
		"//evil.example/app/":        "/app/",
		"/app/\\evil.example":        "/app/",
		"https://evil.example/app/":  "/app/",
		"/app/\r\nSet-Cookie: x=1":   "/app/",
		"javascript:alert(1)":        "/app/",
	} {
		if got := SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestMoneyAndNumbers(t *testing.T) {
	for cents, want := range map[int64]string{0: "KES 0.00", 5: "KES 0.05", 250: "KES 2.50", 150000: "KES 1,500.00",
		123456789: "KES 1,234,567.89", -250: "-KES 2.50"} {
		if got := KES(cents); got != want {
			t.Errorf("KES(%d) = %q; want %q", cents, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1000000: "1,000,000", -1234: "-1,234"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q; want %q", n, got, want)
		}
	}
}

func TestBarChartScalesToANiceTop(t *testing.T) {
	pts := []Point{{"Nov 1", 0, "KES 0.00"}, {"Nov 2", 3.2, "KES 3.20"}, {"Nov 3", 0.001, "KES 0.00"}}
	c := NewBarChart("spend", "Spend", "per day", pts, func(v float64) string { return KES(int64(v * 100)) })
	if len(c.Bars) != 3 || c.Empty || c.FirstLabel != "Nov 1" || c.LastLabel != "Nov 3" {
		t.Fatalf("chart = %+v", c)
	}
	if c.Ticks[0].Label != "KES 5.00" || c.Ticks[2].Label != "KES 0.00" {
		t.Errorf("ticks = %+v; want KES 5.00 at the top (3.20 rounded up), 0 at the bottom", c.Ticks)
	}
	if c.Bars[0].H != "0" || c.Bars[1].H != "128" || c.Bars[2].H != "1" {
		t.Errorf("bar heights %s %s %s; want 0, 128 (3.2 of 5 of 200) and a visible 1", c.Bars[0].H, c.Bars[1].H, c.Bars[2].H)
	}
	if !strings.Contains(c.Bars[1].Label, "Nov 2: KES 3.20") {
		t.Errorf("bar label %q", c.Bars[1].Label)
	}
	if e := NewBarChart("e", "", "", []Point{{"a", 0, ""}}, kesOf); !e.Empty {
		t.Error("an all-zero chart is not Empty")
	}
	if h := NewHBar("rate", 120); h.Fill != "100" || h.Shown != "100.0%" {
		t.Errorf("HBar(120) = %+v; want it capped at 100", h)
	}
}

// kesOf formats a chart value in KES (test helper).
func kesOf(v float64) string { return KES(int64(v * 100)) }

func TestFieldIDs(t *testing.T) {
	for in, want := range map[string]string{"email": "f-email", "recipients[3]": "f-recipients-3", "new_password": "f-new_password"} {
		if got := fieldID(in); got != want {
			t.Errorf("fieldID(%q) = %q; want %q", in, got, want)
		}
	}
}
