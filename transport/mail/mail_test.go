package mail

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestMessagesSayWhatTheyAreFor(t *testing.T) {
	m := Messages{Product: "Tuma", PublicURL: "https://api.example.com", DashboardURL: "https://app.example.com"}
	cases := []struct {
		name, purpose, subject string
		text                   []string
		e                      func() (string, string, string, string)
	}{
		{"link", "verification", "Confirm your email address for Tuma",
			[]string{"https://api.example.com/auth/verify-email?token=ev_abc%2B1", "expires in 48 hours", "KES 2.50"},
			func() (string, string, string, string) {
				e := m.VerificationLink("a@b.co", "Jane", "ev_abc+1", 48*time.Hour)
				return e.Purpose, e.Subject, e.Text, e.HTML
			}},
		{"code", "verification_code", "Your Tuma verification code: 042917",
			[]string{"042917", "expires in 10 minutes", "5 wrong tries"},
			func() (string, string, string, string) {
				e := m.VerificationCode("a@b.co", "042917", 10*time.Minute)
				return e.Purpose, e.Subject, e.Text, e.HTML
			}},
		{"reset", "password_reset", "Reset your Tuma password",
			[]string{"pr_tok", "https://app.example.com/reset?token=pr_tok", "expires in 1 hour"},
			func() (string, string, string, string) {
				e := m.PasswordReset("a@b.co", "Jane", "pr_tok", time.Hour)
				return e.Purpose, e.Subject, e.Text, e.HTML
			}},
	}
	for _, c := range cases {
		purpose, subject, text, html := c.e()
		if purpose != c.purpose || subject != c.subject {
			t.Errorf("%s: purpose %q subject %q; want %q %q", c.name, purpose, subject, c.purpose, c.subject)
		}
		for _, want := range c.text {
			if !strings.Contains(text, want) {
				t.Errorf("%s: text part lacks %q:\n%s", c.name, want, text)
			}
		}
		if !strings.HasPrefix(html, "<!doctype html>") || !strings.Contains(html, c.text[0][:6]) {
			t.Errorf("%s: html part %q", c.name, html)
		}
	}
}

func TestResetLinkLandsOnTheDashboardsResetPage(t *testing.T) {
	for dashboard, want := range map[string]string{
		"http://127.0.0.1:8080/app/":  "http://127.0.0.1:8080/app/reset?token=pr_a%2Bb",
		"https://app.example.com":     "https://app.example.com/reset?token=pr_a%2Bb",
		"https://example.com/console": "https://example.com/reset?token=pr_a%2Bb",
	} {
		e := Messages{Product: "Tuma", DashboardURL: dashboard}.PasswordReset("a@b.co", "Jane", "pr_a+b", time.Hour)
		if !strings.Contains(e.Text, want+"\n") {
			t.Errorf("dashboard %s: reset mail %q; want the link %s", dashboard, e.Text, want)
		}
	}
}

func TestMessagesEscapeNamesInHTML(t *testing.T) {
	e := Messages{Product: "Tuma", PublicURL: "http://x"}.VerificationLink("a@b.co", `<script>alert(1)</script>`, "ev_t", time.Hour)
	if strings.Contains(e.HTML, "<script>") || !strings.Contains(e.HTML, "&lt;script&gt;") {
		t.Errorf("a name was not escaped in the HTML part: %s", e.HTML)
	}
}

func TestOutboxBackoffDoublesUpToTheCap(t *testing.T) {
	o, err := NewOutbox(nil, nil, OutboxOptions{RetryMin: time.Second, RetryMax: 10 * time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for attempts, w := range want {
		if got := o.backoff(attempts); got != w {
			t.Errorf("backoff after %d attempts = %v; want %v", attempts, got, w)
		}
	}
	if got := o.backoff(1000); got != 10*time.Second {
		t.Errorf("backoff after 1000 attempts = %v; want the cap", got)
	}
}

func TestLogSenderShowsTheLinkOnItsOwn(t *testing.T) {
	var buf strings.Builder
	s := &LogSender{log: slog.New(slog.NewTextHandler(&buf, nil))}
	e := Messages{Product: "Tuma", PublicURL: "http://127.0.0.1:8080"}.VerificationLink("a@b.co", "Jane", "ev_tok", time.Hour)
	if err := s.Send(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `link="http://127.0.0.1:8080/auth/verify-email?token=ev_tok"`) {
		t.Errorf("log line lacks the bare link: %s", buf.String())
	}
}
