package app_test

import (
	"bufio"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// smtpSink is a minimal SMTP server that keeps every message it receives.
type smtpSink struct {
	t    *testing.T
	ln   net.Listener
	mu   sync.Mutex
	msgs []received
	wg   sync.WaitGroup
}

type received struct {
	To, Subject, Text, HTML string
}

// startSMTP listens on addr ("127.0.0.1:0" for any port) until the test ends.
func startSMTP(t *testing.T, addr string) *smtpSink {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpSink{t: t, ln: ln}
	s.wg.Go(s.accept)
	t.Cleanup(s.close)
	return s
}

func (s *smtpSink) addr() string { return s.ln.Addr().String() }

func (s *smtpSink) close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *smtpSink) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	reply := func(line string) { _, _ = io.WriteString(c, line+"\r\n") }
	reply("220 sink ESMTP")
	var to string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			reply("250-sink")
			reply("250 8BITMIME")
		case strings.HasPrefix(cmd, "HELO"), strings.HasPrefix(cmd, "MAIL FROM"), strings.HasPrefix(cmd, "RSET"), strings.HasPrefix(cmd, "NOOP"):
			reply("250 OK")
		case strings.HasPrefix(cmd, "RCPT TO"):
			to = strings.Trim(strings.TrimSpace(line[len("RCPT TO:"):]), "<>\r\n")
			reply("250 OK")
		case cmd == "DATA":
			reply("354 go ahead")
			var data strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				data.WriteString(strings.TrimPrefix(l, "."))
			}
			s.keep(to, data.String())
			reply("250 queued")
		case cmd == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}

func (s *smtpSink) keep(to, raw string) {
	m, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		s.t.Errorf("sink: bad message: %v", err)
		return
	}
	dec := new(mime.WordDecoder)
	subject, _ := dec.DecodeHeader(m.Header.Get("Subject"))
	rec := received{To: to, Subject: subject}
	mt, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(m.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			body := decodePart(p.Header.Get("Content-Transfer-Encoding"), p)
			switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
			case "text/plain":
				rec.Text = body
			case "text/html":
				rec.HTML = body
			}
		}
	} else {
		rec.Text = decodePart(m.Header.Get("Content-Transfer-Encoding"), m.Body)
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, rec)
	s.mu.Unlock()
}

func decodePart(enc string, r io.Reader) string {
	if strings.EqualFold(enc, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, _ := io.ReadAll(r)
	return string(b)
}

// wait returns the next message to `to` whose subject contains subject, polling up to 15 s.
func (s *smtpSink) wait(to, subject string) received {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s.mu.Lock()
		for i, m := range s.msgs {
			if m.To == to && strings.Contains(m.Subject, subject) {
				s.msgs = append(s.msgs[:i], s.msgs[i+1:]...)
				s.mu.Unlock()
				return m
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			s.t.Fatalf("no email to %s about %q arrived", to, subject)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// count reports how many messages (not yet taken) went to `to`.
func (s *smtpSink) count(to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		if m.To == to {
			n++
		}
	}
	return n
}

var (
	linkRE  = regexp.MustCompile(`https?://\S+/auth/verify-email\?token=\S+`)
	codeRE  = regexp.MustCompile(`\b\d{6}\b`)
	tokenRE = regexp.MustCompile(`pr_[A-Za-z0-9_-]{43}`)
)
