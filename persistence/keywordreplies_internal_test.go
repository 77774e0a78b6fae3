package persistence

import (
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// A number's day of confirmations is Nairobi's (UTC+3): it turns at 21:00 UTC.
func TestReplyDay(t *testing.T) {
	for _, c := range []struct {
		at   string
		want string
	}{
		{"2026-03-01T20:59:59Z", "2026-03-01"},
		{"2026-03-01T21:00:00Z", "2026-03-02"},
		{"2026-03-02T00:30:00+03:00", "2026-03-02"},
		{"2026-12-31T22:00:00Z", "2027-01-01"},
	} {
		at, err := time.Parse(time.RFC3339, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := replyDay(at); got != c.want {
			t.Errorf("replyDay(%s) = %s; want %s", c.at, got, c.want)
		}
	}
}

// Every confirmation is one GSM-7 part with a company name of the longest an account may have.
func TestReplyTextsFitOnePart(t *testing.T) {
	long := "Wakulima wa Kahawa na Chai wa Kaunti ya Kirinyaga Sacco Ltd."[:60]
	for _, kw := range []struct {
		word   string
		action KeywordAction
	}{{"STOP", KeywordOptOut}, {"ACHA", KeywordOptOut}, {"START", KeywordOptIn}, {"ANZA", KeywordOptIn}} {
		tpl := replyTemplate(kw.word, kw.action)
		text := replyText(tpl, long, "ACME")
		if s := carriers.Segment(text); s.Parts != 1 || s.Encoding != carriers.GSM7 || !strings.Contains(text, long) {
			t.Errorf("%s: %q is %d %s parts; want one GSM-7 part naming the company", kw.word, text, s.Parts, s.Encoding)
		}
	}
}
