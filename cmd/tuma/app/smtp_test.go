package app_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/bench/smtpsink"
)

// smtpSink is the test's mail server: every message sent to it is kept.
type smtpSink struct {
	*smtpsink.Sink
	t *testing.T
}

// startSMTP listens on addr ("127.0.0.1:0" for any port) until the test ends; a message it
// could not read fails the test.
func startSMTP(t *testing.T, addr string) *smtpSink {
	t.Helper()
	s, err := smtpsink.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, err := range s.Errors() {
			t.Errorf("sink: %v", err)
		}
	})
	return &smtpSink{Sink: s, t: t}
}

func (s *smtpSink) addr() string { return s.Addr() }

func (s *smtpSink) close() { s.Close() }

// wait returns the next message to `to` whose subject contains subject, polling up to 15 s.
func (s *smtpSink) wait(to, subject string) smtpsink.Mail {
	s.t.Helper()
	m, err := s.Wait(context.Background(), to, subject, 15*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

// count reports how many messages (not yet taken) went to `to`.
func (s *smtpSink) count(to string) int { return s.Count(to) }

var (
	linkRE  = regexp.MustCompile(`https?://\S+/auth/verify-email\?token=\S+`)
	codeRE  = regexp.MustCompile(`\b\d{6}\b`)
	tokenRE = regexp.MustCompile(`pr_[A-Za-z0-9_-]{43}`)
)
