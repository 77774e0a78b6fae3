// Quiet hours: the daily window of Nairobi's clock in which an account's promotional messages
// wait (CONTRACT §15).

package persistence

import (
	"fmt"
	"time"
)

// nairobiOffset is Africa/Nairobi's: UTC+3 all year (no daylight saving since 1942), fixed
// here so that neither the host's zone files nor PostgreSQL's decide a window (the SQL
// function in_quiet_hours agrees).
const nairobiOffset = 3 * time.Hour

// DefaultOptOutText is the opt-out instruction appended to promotional messages unless the
// account sets its own: Safaricom's free DND menu for marketing messages.
const DefaultOptOutText = "STOP*456*9*5#"

// QuietHours is a window of Nairobi's clock, in minutes after midnight: Start included, End
// not. A window whose start is after its end runs over midnight (20:00–08:00).
type QuietHours struct {
	Start, End int
}

// An account's quiet hours until it changes them: 20:00 to 08:00.
const (
	DefaultQuietStart = 20 * 60
	DefaultQuietEnd   = 8 * 60
)

// ParseClock reads "HH:MM" (00:00 to 23:59) as minutes after midnight.
func ParseClock(s string) (int, error) {
	var h, m int
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	for i, c := range []byte(s) {
		if i != 2 && (c < '0' || c > '9') {
			return 0, fmt.Errorf("%q is not HH:MM", s)
		}
	}
	h, m = int(s[0]-'0')*10+int(s[1]-'0'), int(s[3]-'0')*10+int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, fmt.Errorf("%q is not a time of day", s)
	}
	return h*60 + m, nil
}

// FormatClock writes minutes after midnight as "HH:MM".
func FormatClock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

// minuteOfDay is t's minute after midnight in Nairobi.
func minuteOfDay(t time.Time) int {
	l := t.UTC().Add(nairobiOffset)
	return l.Hour()*60 + l.Minute()
}

// Contains reports whether t falls inside the window.
func (q QuietHours) Contains(t time.Time) bool {
	m := minuteOfDay(t)
	if q.Start < q.End {
		return m >= q.Start && m < q.End
	}
	return m >= q.Start || m < q.End
}

// Next is the first moment after t at which the window opens or closes: its end when t is
// inside it, else its start.
func (q QuietHours) Next(t time.Time) time.Time {
	edge := q.Start
	if q.Contains(t) {
		edge = q.End
	}
	l := t.UTC().Add(nairobiOffset)
	midnight := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC).Add(-nairobiOffset)
	at := midnight.Add(time.Duration(edge) * time.Minute)
	if !at.After(t) {
		at = at.AddDate(0, 0, 1)
	}
	return at
}

// String is the window as "HH:MM–HH:MM".
func (q QuietHours) String() string { return FormatClock(q.Start) + "–" + FormatClock(q.End) }
