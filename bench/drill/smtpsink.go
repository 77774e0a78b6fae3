package drill

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"time"
)

// smtpSink is a tiny SMTP server the security drill points its nodes at (TUMA_SMTP_URL).
// Without it a development node writes every email in full to its log — verification links,
// codes and reset tokens included, by design (README: Email) — and the log scan would find
// the very secrets the drill asked for. With it mail leaves the node as it would in
// production, the drill reads the codes and tokens from the mails, and every line of every
// log is scanned with no exception.
type smtpSink struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	msgs []mailMsg
}

// mailMsg is one email the sink received.
type mailMsg struct {
	to, subject, text string
}

func newSMTPSink() (*smtpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("smtp sink: %w", err)
	}
	s := &smtpSink{ln: ln}
	s.wg.Go(s.accept)
	return s, nil
}

// url is the TUMA_SMTP_URL of the sink (no credentials: nothing to leak).
func (s *smtpSink) url() string { return "smtp://" + s.ln.Addr().String() }

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

// serve speaks just enough SMTP for the node's client: no STARTTLS, no AUTH.
func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	reply := func(line string) { _, _ = io.WriteString(c, line+"\r\n") }
	reply("220 drill-sink ESMTP")
	var to string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			reply("250-drill-sink")
			reply("250 8BITMIME")
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
		default: // HELO, MAIL FROM, RSET, NOOP
			reply("250 OK")
		}
	}
}

func (s *smtpSink) keep(to, raw string) {
	m, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		return
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	msg := mailMsg{to: strings.ToLower(to), subject: subject}
	mt, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(m.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct == "text/plain" {
				msg.text = decodeMailPart(p.Header.Get("Content-Transfer-Encoding"), p)
			}
		}
	} else {
		msg.text = decodeMailPart(m.Header.Get("Content-Transfer-Encoding"), m.Body)
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, msg)
	s.mu.Unlock()
}

func decodeMailPart(enc string, r io.Reader) string {
	if strings.EqualFold(enc, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, _ := io.ReadAll(r)
	return string(b)
}

// wait takes the first mail to `to` whose subject contains subject, waiting up to limit.
func (s *smtpSink) wait(ctx context.Context, to, subject string, limit time.Duration) (mailMsg, error) {
	to = strings.ToLower(to)
	deadline := time.Now().Add(limit)
	for {
		s.mu.Lock()
		for i, m := range s.msgs {
			if m.to == to && strings.Contains(m.subject, subject) {
				s.msgs = append(s.msgs[:i], s.msgs[i+1:]...)
				s.mu.Unlock()
				return m, nil
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			return mailMsg{}, fmt.Errorf("no email to %s about %q within %s", to, subject, limit)
		}
		select {
		case <-ctx.Done():
			return mailMsg{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// What the drill reads out of mails.
var (
	mailCodeRE  = regexp.MustCompile(`\b\d{6}\b`)
	mailLinkRE  = regexp.MustCompile(`[?&]token=(ev_[A-Za-z0-9_%-]+)`)
	mailResetRE = regexp.MustCompile(`pr_[A-Za-z0-9_-]{20,}`)
)
