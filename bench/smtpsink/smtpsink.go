// Package smtpsink is a tiny SMTP server that keeps every mail it receives, for tests and
// drills that point a node at it (TUMA_SMTP_URL) and read the codes and links it mails.
package smtpsink

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
	"strings"
	"sync"
	"time"
)

// Mail is one message the sink received: the text/plain and text/html parts decoded.
type Mail struct {
	To, Subject, Text, HTML string
}

// Sink speaks just enough SMTP for the node's client: no STARTTLS, no AUTH, so a node needs
// no credentials for it and has none to leak.
type Sink struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	msgs []Mail
	errs []error // messages that could not be read
}

// Listen starts a sink on addr ("127.0.0.1:0" for any port); Close stops it.
func Listen(addr string) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("smtp sink: %w", err)
	}
	s := &Sink{ln: ln}
	s.wg.Go(s.accept)
	return s, nil
}

// Addr is the address the sink listens on.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// URL is the sink's TUMA_SMTP_URL.
func (s *Sink) URL() string { return "smtp://" + s.Addr() }

// Close stops listening and waits for every connection to end. Closing twice is harmless.
func (s *Sink) Close() {
	s.ln.Close()
	s.wg.Wait()
}

// Errors lists the messages the sink received but could not read.
func (s *Sink) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func (s *Sink) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *Sink) serve(c net.Conn) {
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

func (s *Sink) keep(to, raw string) {
	m, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Errorf("bad message to %s: %w", to, err))
		s.mu.Unlock()
		return
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	msg := Mail{To: to, Subject: subject}
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
				msg.Text = body
			case "text/html":
				msg.HTML = body
			}
		}
	} else {
		msg.Text = decodePart(m.Header.Get("Content-Transfer-Encoding"), m.Body)
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, msg)
	s.mu.Unlock()
}

func decodePart(enc string, r io.Reader) string {
	if strings.EqualFold(enc, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, _ := io.ReadAll(r)
	return string(b)
}

// Wait takes the first mail to `to` (any case) whose subject contains subject, polling until
// limit has passed.
func (s *Sink) Wait(ctx context.Context, to, subject string, limit time.Duration) (Mail, error) {
	deadline := time.Now().Add(limit)
	for {
		s.mu.Lock()
		for i, m := range s.msgs {
			if strings.EqualFold(m.To, to) && strings.Contains(m.Subject, subject) {
				s.msgs = append(s.msgs[:i], s.msgs[i+1:]...)
				s.mu.Unlock()
				return m, nil
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			return Mail{}, fmt.Errorf("no email to %s about %q within %s", to, subject, limit)
		}
		select {
		case <-ctx.Done():
			return Mail{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Count is how many mails to `to` (any case) were received and not taken yet.
func (s *Sink) Count(to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		if strings.EqualFold(m.To, to) {
			n++
		}
	}
	return n
}
