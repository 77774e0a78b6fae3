// Package mail sends Tuma's transactional email: the messages themselves (each with a plain
// text and an HTML part that say what they are for), the senders (SMTP, or the log in
// development) and the outbox worker that delivers what the store has queued, with retries.
package mail

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/tuma-sms/tuma/persistence"
)

// Sender delivers one email.
type Sender interface {
	Send(ctx context.Context, e persistence.Email) error
}

// NewSender returns an SMTP sender for smtpURL (smtp:// with STARTTLS when offered, smtps://
// for TLS from the start; user:password in the URL turns on AUTH), or the log sender when
// smtpURL is empty.
func NewSender(smtpURL, from string, log *slog.Logger) (Sender, error) {
	if smtpURL == "" {
		return &LogSender{log: log}, nil
	}
	u, err := url.Parse(smtpURL)
	if err != nil {
		return nil, fmt.Errorf("smtp url: %w", err)
	}
	s := &SMTPSender{host: u.Hostname(), from: from}
	opts := []gomail.Option{gomail.WithTimeout(15 * time.Second)}
	port := u.Port()
	switch u.Scheme {
	case "smtps":
		opts = append(opts, gomail.WithSSL())
		if port == "" {
			port = "465"
		}
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
		if port == "" {
			port = "587"
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("smtp port %q: %w", port, err)
	}
	opts = append(opts, gomail.WithPort(p))
	if u.User != nil && u.User.Username() != "" {
		pass, _ := u.User.Password()
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(u.User.Username()), gomail.WithPassword(pass))
	}
	s.opts = opts
	return s, nil
}

// SMTPSender delivers over SMTP, one connection per email (transactional volume is small).
type SMTPSender struct {
	host string
	from string
	opts []gomail.Option
}

// Send delivers e.
func (s *SMTPSender) Send(ctx context.Context, e persistence.Email) error {
	m := gomail.NewMsg()
	if err := m.From(s.from); err != nil {
		return fmt.Errorf("from %q: %w", s.from, err)
	}
	if err := m.To(e.To); err != nil {
		return fmt.Errorf("to %q: %w", e.To, err)
	}
	m.Subject(e.Subject)
	m.SetMessageID()
	m.SetDate()
	m.SetBodyString(gomail.TypeTextPlain, e.Text)
	m.AddAlternativeString(gomail.TypeTextHTML, e.HTML)
	c, err := gomail.NewClient(s.host, s.opts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, m); err != nil {
		return fmt.Errorf("send to %s: %w", e.To, err)
	}
	return nil
}

// LogSender writes each email to the log in full, so a developer can follow the links.
type LogSender struct{ log *slog.Logger }

// Send logs e, with its link (if any) on its own so a terminal can open it.
func (s *LogSender) Send(_ context.Context, e persistence.Email) error {
	attrs := []any{slog.String("to", e.To), slog.String("subject", e.Subject), slog.String("purpose", e.Purpose)}
	if link := linkRE.FindString(e.Text); link != "" {
		attrs = append(attrs, slog.String("link", link))
	}
	s.log.Info("email (not sent: TUMA_SMTP_URL is unset)", append(attrs, slog.String("body", e.Text))...)
	return nil
}

var linkRE = regexp.MustCompile(`https?://[^\s"<>]+`)

// Messages renders the emails Tuma sends.
type Messages struct {
	Product      string // "Tuma"
	PublicURL    string // verification links point here
	DashboardURL string // the dashboard: its reset page is where a person picks a new password
}

// VerificationLink asks the recipient to confirm their address with a link.
func (m Messages) VerificationLink(to, name, token string, ttl time.Duration) persistence.Email {
	link := m.PublicURL + "/auth/verify-email?token=" + url.QueryEscape(token)
	return m.render("verification", to, "Confirm your email address for "+m.Product, name,
		[]string{
			"Please confirm that this is your email address, so we can keep your " + m.Product + " account safe.",
			"Once it is confirmed we add KES 2.50 to your wallet: 5 free SMS.",
		}, link, "Confirm my email",
		"The link works once and expires in "+human(ttl)+". If you did not sign up, ignore this email.")
}

// VerificationCode sends a 6-digit code to confirm the address.
func (m Messages) VerificationCode(to, code string, ttl time.Duration) persistence.Email {
	return m.render("verification_code", to, "Your "+m.Product+" verification code: "+code, "",
		[]string{
			"Enter this code to confirm your email address:",
			code,
		}, "", "",
		"The code expires in "+human(ttl)+". After 5 wrong tries it stops working and you need a new one. If you did not ask for it, ignore this email.")
}

// PasswordReset sends a link to choose a new password.
func (m Messages) PasswordReset(to, name, token string, ttl time.Duration) persistence.Email {
	link := dashboardPage(m.DashboardURL, "reset") + "?token=" + url.QueryEscape(token)
	return m.render("password_reset", to, "Reset your "+m.Product+" password", name,
		[]string{
			"Someone (hopefully you) asked to reset the password of your " + m.Product + " account.",
			"Open the link below to choose a new one. From code, send this token with the new password to POST /auth/reset-password:",
			token,
		}, link, "Reset my password",
		"The link works once and expires in "+human(ttl)+". If you did not ask for it, ignore this email: your password stays as it is.")
}

// dashboardPage is the address of one of the dashboard's pages: name resolved against the
// dashboard's URL, so <public url>/app/ gives <public url>/app/reset.
func dashboardPage(dashboard, name string) string {
	base, err := url.Parse(dashboard)
	if err != nil {
		return strings.TrimRight(dashboard, "/") + "/" + name
	}
	return base.ResolveReference(&url.URL{Path: name}).String()
}

var page = template.Must(template.New("mail").Parse(`<!doctype html>
<html><body style="font-family:Arial,Helvetica,sans-serif;color:#222;max-width:560px;margin:24px auto">
<h2 style="color:#0b6e4f">{{.Product}}</h2>
{{if .Name}}<p>Hello {{.Name}},</p>{{end}}
{{range .Lines}}<p>{{.}}</p>
{{end}}{{if .Link}}<p><a href="{{.Link}}" style="background:#0b6e4f;color:#fff;padding:10px 18px;border-radius:4px;text-decoration:none">{{.Action}}</a></p>
<p style="font-size:12px;color:#666">Or paste this address into your browser: {{.Link}}</p>
{{end}}<p style="font-size:12px;color:#666">{{.Footer}}</p>
</body></html>`))

func (m Messages) render(purpose, to, subject, name string, lines []string, link, action, footer string) persistence.Email {
	var text strings.Builder
	if name != "" {
		fmt.Fprintf(&text, "Hello %s,\n\n", name)
	}
	for _, l := range lines {
		text.WriteString(l + "\n\n")
	}
	if link != "" {
		fmt.Fprintf(&text, "%s: %s\n\n", action, link)
	}
	text.WriteString(footer + "\n\n-- \n" + m.Product + "\n")
	var html bytes.Buffer
	// The template is fixed and its data are strings: executing it cannot fail.
	_ = page.Execute(&html, map[string]any{"Product": m.Product, "Name": name, "Lines": lines, "Link": link,
		"Action": action, "Footer": footer})
	return persistence.Email{To: to, Subject: subject, Text: text.String(), HTML: html.String(), Purpose: purpose}
}

func human(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return fmt.Sprintf("%d minutes", d/time.Minute)
}
