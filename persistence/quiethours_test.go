package persistence

import (
	"testing"
	"time"
)

func TestQuietHoursContainsAndNext(t *testing.T) {
	eat := time.FixedZone("EAT", 3*60*60)
	at := func(h, m int) time.Time { return time.Date(2026, 11, 26, h, m, 0, 0, eat) }
	night := QuietHours{Start: DefaultQuietStart, End: DefaultQuietEnd} // over midnight
	day := QuietHours{Start: 13 * 60, End: 14 * 60}
	cases := []struct {
		q     QuietHours
		t     time.Time
		quiet bool
		next  time.Time
	}{
		{night, at(19, 59), false, at(20, 0)},
		{night, at(20, 0), true, at(8, 0).AddDate(0, 0, 1)},
		{night, at(23, 59), true, at(8, 0).AddDate(0, 0, 1)},
		{night, at(0, 0), true, at(8, 0)},
		{night, at(7, 59), true, at(8, 0)},
		{night, at(8, 0), false, at(20, 0)},
		{day, at(12, 0), false, at(13, 0)},
		{day, at(13, 30), true, at(14, 0)},
		{day, at(14, 0), false, at(13, 0).AddDate(0, 0, 1)},
	}
	for _, c := range cases {
		if got := c.q.Contains(c.t); got != c.quiet {
			t.Errorf("%s at %s: quiet %v, want %v", c.q, c.t.Format("15:04"), got, c.quiet)
		}
		if got := c.q.Next(c.t); !got.Equal(c.next) {
			t.Errorf("%s at %s: next %s, want %s", c.q, c.t.Format("15:04"), got, c.next)
		}
	}
	// UTC 17:30 is 20:30 in Nairobi.
	if !night.Contains(time.Date(2026, 11, 26, 17, 30, 0, 0, time.UTC)) {
		t.Error("17:30 UTC is 20:30 in Nairobi, inside 20:00–08:00")
	}
}

func TestParseClock(t *testing.T) {
	for s, want := range map[string]int{"00:00": 0, "08:00": 480, "20:00": 1200, "23:59": 1439} {
		if got, err := ParseClock(s); err != nil || got != want {
			t.Errorf("ParseClock(%q) = %d, %v; want %d", s, got, err, want)
		}
		if FormatClock(want) != s {
			t.Errorf("FormatClock(%d) = %q, want %q", want, FormatClock(want), s)
		}
	}
	for _, s := range []string{"", "8:00", "24:00", "12:60", "12-00", "ab:cd", "12:00 ", "+1:00"} {
		if _, err := ParseClock(s); err == nil {
			t.Errorf("ParseClock(%q) accepted", s)
		}
	}
}
