// Package send is the dashboard's Send page (/app/send): numbers pasted or a contact group,
// the message, the sender and an optional reference; a live counter priced by the same quote
// as POST /sms/quote, with the look-alike-character fix one click away; a confirmation step;
// and the send itself, once per form however often it is submitted (its Idempotency-Key).
// Each action is the JSON API's operation (transport/api/sms).
//
// A contact group is sent to as its active contacts' numbers, read as GET
// /contacts/export?group_id= reads them, added to the numbers typed: POST /sms/send takes
// numbers only (CONTRACT §4), and a send to a group with merge tags is a campaign (§7).
package send

import (
	"context"
	"embed"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the send operations the JSON API runs too (sms.Handler).
type Operations interface {
	Quote(ctx context.Context, p auth.Principal, in sms.SendInput) (sms.Quote, error)
	SendOnce(ctx context.Context, p auth.Principal, in sms.SendInput, key string) (sms.Accepted, bool, error)
}

// Store is what the page reads: the account's sender IDs (GET /senders), its groups (GET
// /groups), a group's active contacts (GET /contacts/export?group_id=) and the account's
// opt-out text and quiet hours (GET /auth/me).
type Store interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	SenderIDs(ctx context.Context, accountID uuid.UUID) ([]persistence.SenderID, error)
	Groups(ctx context.Context, accountID uuid.UUID) ([]persistence.Group, error)
	ExportContacts(ctx context.Context, accountID uuid.UUID, groupID *uuid.UUID, each func(persistence.Contact) error) error
}

// Page serves the send form.
type Page struct {
	web.Kit[Operations, Store]
	shared string // the shared sender ID, for accounts without one of their own
	now    func() time.Time
}

// New returns the page; shared is the shared sender ID's name (TUMA_SHARED_SENDER_ID).
func New(site *web.Site, ops Operations, store Store, shared string, now func() time.Time) (*Page, error) {
	kit, err := web.NewKit(site, templates, ops, store)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Page{Kit: kit, shared: shared, now: now}, nil
}

// RegisterPages adds the routes.
func (p *Page) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/send", p.form)
	r.Page("POST", "/app/send/quote", p.counter) // htmx: the counter alone
	r.Page("POST", "/app/send/check", p.check)   // without script: the form with its counter
	r.Page("POST", "/app/send/review", p.review) // the confirmation step
	r.Page("POST", "/app/send", p.send)
}

// formData is what the form shows.
type formData struct {
	Key     string // the form's Idempotency-Key: one send however often it is submitted
	Senders []option
	Groups  []option
	Counter counter
}

type option struct {
	Value, Label string
}

func (p *Page) form(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.NewForm()
	return p.render(ctx, rc, http.StatusOK, f, counter{Empty: true}, nil)
}

// render draws the form with its counter, showing err's problem in it when it has one.
func (p *Page) render(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form, c counter, err error) error {
	d, lerr := p.load(ctx, web.AccountID(rc), f)
	if lerr != nil {
		return lerr
	}
	d.Counter = c
	page := &web.Page{Title: "Send SMS", Nav: "/app/send", Data: d, Form: f}
	if err != nil {
		return p.Views.RenderForm(ctx, rc, "send", page, err)
	}
	return p.Views.Render(ctx, rc, status, "send", page)
}

// load reads the choices of the form: the account's approved, active sender IDs (the default
// first) and its groups; the form keeps its Idempotency-Key, or gets one.
func (p *Page) load(ctx context.Context, acct uuid.UUID, f *web.Form) (formData, error) {
	d := formData{Key: f.Get("idempotency_key")}
	if d.Key == "" {
		d.Key = uuid.NewString()
		f.Set("idempotency_key", d.Key)
	}
	senders, err := p.Store.SenderIDs(ctx, acct)
	if err != nil {
		return d, err
	}
	def := "the shared sender ID " + p.shared + ", with your company's name at the start"
	var own []option
	for _, s := range senders {
		if s.Status != persistence.SenderApproved || !s.Active {
			continue
		}
		if s.Default {
			def = s.Name
		}
		own = append(own, option{Value: s.ID.String(), Label: s.Name})
	}
	d.Senders = append([]option{{Value: "", Label: "Your default: " + def}}, own...)
	groups, err := p.Store.Groups(ctx, acct)
	if err != nil {
		return d, err
	}
	d.Groups = []option{{Value: "", Label: "No group"}}
	for _, g := range groups {
		d.Groups = append(d.Groups, option{Value: g.ID.String(), Label: g.Name + " (" + web.Thousands(g.ContactCount) + " contacts)"})
	}
	return d, nil
}

// input turns the form into a send: the numbers typed (one per line, or separated by commas
// or semicolons), then the chosen group's; the message, sender and reference as typed.
func (p *Page) input(ctx context.Context, acct uuid.UUID, f *web.Form) (sms.SendInput, error) {
	in := sms.SendInput{Recipients: splitNumbers(f.Get("recipients")), Message: f.Get("message"), SenderID: f.Get("sender_id"),
		Category: f.Get("category")}
	if ref := f.Get("reference"); ref != "" {
		in.Reference = &ref
	}
	g := f.Get("group_id")
	if g == "" {
		return in, nil
	}
	id, err := uuid.Parse(g)
	if err != nil {
		return in, badGroup()
	}
	groups, err := p.Store.Groups(ctx, acct)
	if err != nil {
		return in, err
	}
	found := false
	for _, gr := range groups {
		found = found || gr.ID == id
	}
	if !found { // another account's group, or one deleted since the form was drawn
		return in, badGroup()
	}
	err = p.Store.ExportContacts(ctx, acct, &id, func(c persistence.Contact) error {
		in.Recipients = append(in.Recipients, c.Phone)
		return nil
	})
	return in, err
}

func badGroup() error {
	return api.Invalid(api.FieldError{Field: "group_id", Message: "is not one of your contact groups"})
}

// splitNumbers reads the numbers field: a number may hold spaces and dashes ("0712 345 678"),
// so only line breaks, commas and semicolons separate them.
func splitNumbers(s string) []string {
	var out []string
	for _, n := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ';' }) {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// fieldErrors shows a problem's recipients[i] errors under the numbers field, naming the
// number (the form has one field for them all).
func fieldErrors(err error, in sms.SendInput) error {
	prob := api.ProblemOf(err)
	if len(prob.Errors) == 0 {
		return err
	}
	out := *prob
	out.Errors = make([]api.FieldError, len(prob.Errors))
	for i, e := range prob.Errors {
		out.Errors[i] = e
		var idx int
		if _, serr := fmt.Sscanf(e.Field, "recipients[%d]", &idx); serr == nil && idx >= 0 && idx < len(in.Recipients) {
			out.Errors[i] = api.FieldError{Field: "recipients", Message: in.Recipients[idx] + ": " + e.Message}
		}
	}
	return &out
}

// promotion is what the page says of a promotional send of message now.
type promotion struct {
	OptOut string // the account's opt-out text
	Added  bool   // the engine adds it: the message does not say it already
	Held   string // inside the account's quiet hours: until when the messages wait ("": they go now)
}

// promotionOf reads the account's opt-out text and quiet hours for a promotional send of
// message now.
func (p *Page) promotionOf(ctx context.Context, acct uuid.UUID, message string) (*promotion, error) {
	a, err := p.Store.AccountByID(ctx, acct)
	if err != nil {
		return nil, err
	}
	pr := &promotion{OptOut: a.OptOutText, Added: !strings.Contains(strings.ToUpper(message), strings.ToUpper(a.OptOutText))}
	if end, ok := web.QuietUntil(a.Quiet, p.now()); ok {
		pr.Held = "It is your quiet hours now (" + web.QuietWindow(a.Quiet) + ", Nairobi time): promotional messages wait, " +
			"and go when they end, on " + web.EAT(end) + "."
	}
	return pr, nil
}

// messagesOf is the Messages page of a job.
func messagesOf(jobID uuid.UUID) string {
	return "/app/messages?" + url.Values{"job_id": {jobID.String()}}.Encode()
}
