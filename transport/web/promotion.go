// What the pages say of an account's promotional messages (CONTRACT §15): the opt-out text
// they carry and the quiet hours they wait out, in Nairobi's time.

package web

import (
	"time"

	"github.com/tuma-sms/tuma/persistence"
)

// QuietWindow is an account's quiet hours in words: "20:00 to 08:00", or "none".
func QuietWindow(q *persistence.QuietHours) string {
	if q == nil {
		return "none"
	}
	return persistence.FormatClock(q.Start) + " to " + persistence.FormatClock(q.End)
}

// QuietUntil is when promotional messages due at t can go: held is true when t falls inside
// the quiet hours, and at is then their end.
func QuietUntil(q *persistence.QuietHours, t time.Time) (at time.Time, held bool) {
	if q == nil || !q.Contains(t) {
		return t, false
	}
	return q.Next(t), true
}

// EAT formats a time as the pages show times people chose: in Nairobi (UTC+3 all year).
func EAT(t time.Time) string {
	return t.In(time.FixedZone("EAT", 3*60*60)).Format("2 Jan 2006, 15:04 EAT")
}
