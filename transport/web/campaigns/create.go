// Creating a campaign: the form, its preview contact by contact, and the creation, once per
// form however often it is sent.

package campaigns

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	campaignsapi "github.com/tuma-sms/tuma/transport/api/campaigns"
	"github.com/tuma-sms/tuma/transport/web"
)

// formData is what the create form shows.
type formData struct {
	Groups    []choice
	HasGroups bool
	Senders   []choice
	Later     bool   // the campaign is scheduled rather than sent now
	Min       string // the earliest time the picker offers: now, in Nairobi
	Key       string // the form's Idempotency-Key: one campaign however often it is sent
	Preview   previewData
	MaxChars  int
	Promo     promo
}

// promo is what the category choice says of the account's promotional messages.
type promo struct {
	Checked bool   // promotional is chosen (the form's default)
	OptOut  string // the text appended to each message
	Quiet   string // the quiet hours in words, or "none"
}

// choice is an option of a select.
type choice struct {
	Value, Label string
	Selected     bool
}

// previewData is the message as the first contacts of the group would get it.
type previewData struct {
	Note        string // why there is nothing to show yet
	Held        string // when a promotional campaign would wait out the quiet hours: until when
	GroupName   string
	Total       int64 // the group's active contacts
	Lines       []line
	Promotional bool
	OptOut      string
}

type line struct {
	campaignsapi.PreviewLine
	Name string
	Cost string
}

// pickerLayout is a datetime-local input's value.
const pickerLayout = "2006-01-02T15:04"

func (p *Pages) newForm(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.NewForm()
	f.Set("when", "now")
	f.Set("category", "promotional") // offered first, and chosen, as CONTRACT §15 asks
	f.Set("group_id", string(rc.QueryArgs().Peek("group_id")))
	return p.renderForm(ctx, rc, http.StatusOK, f, nil, nil)
}

// renderForm draws the create form with f's values, showing err's problem in it when a form
// can (400, 402, 409, 422; others become error pages), and a preview when one was asked.
func (p *Pages) renderForm(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form, err error, pv *previewData) error {
	if err != nil {
		prob := api.ProblemOf(err)
		switch prob.Status {
		case http.StatusBadRequest, http.StatusPaymentRequired, http.StatusConflict, http.StatusUnprocessableEntity:
			f.Fail(prob)
			status = prob.Status
		default:
			return err
		}
	}
	acct := web.AccountID(rc)
	groups, err := p.Store.Groups(ctx, acct)
	if err != nil {
		return err
	}
	senders, err := p.Store.SenderIDs(ctx, acct)
	if err != nil {
		return err
	}
	a, err := p.Store.AccountByID(ctx, acct)
	if err != nil {
		return err
	}
	d := formData{HasGroups: len(groups) > 0, Later: f.Get("when") == "later", Key: uuid.NewString(),
		Min: p.now().In(nairobi()).Format(pickerLayout), MaxChars: campaignsapi.MaxMessageRunes,
		Promo: promo{Checked: f.Get("category") != "transactional", OptOut: a.OptOutText, Quiet: web.QuietWindow(a.Quiet)}}
	d.Groups = append(d.Groups, choice{Value: "", Label: "Choose a group", Selected: f.Get("group_id") == ""})
	for _, g := range groups {
		id := g.ID.String()
		d.Groups = append(d.Groups, choice{Value: id, Label: g.Name + " (" + web.Thousands(g.ContactCount) + " contacts)",
			Selected: id == f.Get("group_id")})
	}
	d.Senders = p.senderChoices(senders, f.Get("sender_id"))
	if pv != nil {
		d.Preview = *pv
	} else {
		d.Preview = previewData{Note: "Choose a group and write the message, then preview it as the group’s first contacts will get it.",
			Held: p.held(a, f)}
	}
	return p.Views.Render(ctx, rc, status, "new", &web.Page{Title: "New campaign", Nav: listPath, Data: d, Form: f})
}

// senderChoices are the account's approved, active sender IDs, after its default route.
func (p *Pages) senderChoices(list []persistence.SenderID, selected string) []choice {
	def := "Shared: " + p.shared + " (your company name in front)"
	var own []choice
	for _, s := range list {
		if s.Status != persistence.SenderApproved || !s.Active {
			continue
		}
		if s.Default {
			def = "Your default: " + s.Name
		}
		id := s.ID.String()
		own = append(own, choice{Value: id, Label: s.Name + " (" + networkName(s.Network) + ")", Selected: id == selected})
	}
	return append([]choice{{Value: "", Label: def, Selected: selected == ""}}, own...)
}

func networkName(n string) string {
	switch n {
	case "safaricom":
		return "Safaricom"
	case "airtel":
		return "Airtel"
	case "telkom":
		return "Telkom"
	case "all":
		return "all networks"
	}
	return n
}

// input is the form as the API's input; ok is false when the schedule cannot be read (its
// error is in f).
func input(f *web.Form) (in campaignsapi.Input, ok bool) {
	in = campaignsapi.Input{Name: field(f, "name"), Message: field(f, "message"), GroupID: given(f, "group_id"),
		SenderID: given(f, "sender_id"), Reference: given(f, "reference"), Category: given(f, "category")}
	if f.Get("when") != "later" {
		return in, true
	}
	raw := strings.TrimSpace(f.Get("scheduled_at"))
	if raw == "" {
		f.AddError("scheduled_at", "is required to schedule the campaign: pick a date and time, or send it now")
		return in, false
	}
	at, ok := pickedTime(raw)
	if !ok {
		f.AddError("scheduled_at", "must be a date and time, e.g. 2026-12-01 09:00")
		return in, false
	}
	s := at.Format(time.RFC3339)
	in.ScheduledAt = &s
	return in, true
}

// pickedTime reads a datetime-local input's value, in Nairobi.
func pickedTime(raw string) (time.Time, bool) {
	at, err := time.ParseInLocation(pickerLayout, raw, nairobi())
	if err != nil {
		if at, err = time.ParseInLocation(pickerLayout+":05", raw, nairobi()); err != nil {
			return time.Time{}, false
		}
	}
	return at, true
}

// held says when a promotional campaign created from f now would wait out the account's
// quiet hours, and until when; "" when it would not (or is not promotional).
func (p *Pages) held(a persistence.Account, f *web.Form) string {
	if f.Get("category") != "promotional" {
		return ""
	}
	start, later := p.now(), f.Get("when") == "later"
	if later {
		at, ok := pickedTime(strings.TrimSpace(f.Get("scheduled_at")))
		if !ok {
			return ""
		}
		start = at
	}
	end, held := web.QuietUntil(a.Quiet, start)
	switch {
	case !held:
		return ""
	case later:
		return "The time chosen, " + eat(start) + ", falls in your quiet hours (" + web.QuietWindow(a.Quiet) +
			", Nairobi time): promotional messages wait, so the campaign will start when they end, on " + eat(end) + "."
	}
	return "It is your quiet hours now (" + web.QuietWindow(a.Quiet) + ", Nairobi time): promotional messages wait, " +
		"so a campaign created now will start when they end, on " + eat(end) + "."
}

// field is a form's value as an operation's input: absent when the form lacks it.
func field(f *web.Form, name string) *string {
	v, ok := f.Values[name]
	if !ok {
		return nil
	}
	return &v
}

// given is a form field as the API reads it: a field left empty is one not given.
func given(f *web.Form, name string) *string {
	v := strings.TrimSpace(f.Get(name))
	if v == "" {
		return nil
	}
	return &v
}

// create creates the campaign with POST /campaigns' operation, once per form (its
// idempotency_key), and shows it.
func (p *Pages) create(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.ReadForm(rc)
	in, ok := input(f)
	if !ok {
		return p.renderForm(ctx, rc, http.StatusUnprocessableEntity, f, nil, nil)
	}
	c, replayed, err := p.Ops.Create(ctx, web.AccountID(rc), in, f.Get("idempotency_key"))
	if err != nil {
		return p.renderForm(ctx, rc, 0, f, err, nil)
	}
	msg := "Created the campaign “" + c.Name + "” to " + web.Thousands(int64(c.TotalRecipients)) + " contacts, for " +
		web.KES(c.CostCents) + ". "
	if c.Suppressed > 0 {
		msg += web.Thousands(int64(c.Suppressed)) + " on your suppression list are left out, uncharged. "
	}
	start := c.CreatedAt
	if c.ScheduledAt != nil {
		start = *c.ScheduledAt
	}
	end, held := time.Time{}, false
	if c.Promotional {
		a, err := p.Store.AccountByID(ctx, c.AccountID)
		if err != nil {
			return err
		}
		end, held = web.QuietUntil(a.Quiet, start)
	}
	switch {
	case held && c.ScheduledAt != nil:
		msg += "It is scheduled for " + eat(start) + ", in your quiet hours, so it will start when they end, on " + eat(end) + "."
	case held:
		msg += "It is your quiet hours, so it will start when they end, on " + eat(end) + "."
	case c.ScheduledAt != nil:
		msg += "It goes out on " + eat(*c.ScheduledAt) + "."
	default:
		msg += "It is going out now."
	}
	if replayed {
		msg = "This form was sent already: here is the campaign it created, “" + c.Name + "”."
	}
	p.Site.Flash(rc, "success", msg)
	return api.SeeOther(rc, campaignPath(c.ID))
}

// preview shows the message for the group's first contacts: as a fragment for htmx, or the
// whole form again without it.
func (p *Pages) preview(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.ReadForm(rc)
	pv, err := p.previewOf(ctx, web.AccountID(rc), f)
	if err != nil {
		return err
	}
	if len(rc.Request.Header.Peek("HX-Request")) > 0 {
		return p.Views.Fragment(rc, http.StatusOK, "new", "preview", pv)
	}
	return p.renderForm(ctx, rc, http.StatusOK, f, nil, &pv)
}

func (p *Pages) previewOf(ctx context.Context, acct uuid.UUID, f *web.Form) (previewData, error) {
	a, err := p.Store.AccountByID(ctx, acct)
	if err != nil {
		return previewData{}, err
	}
	d, err := p.linesOf(ctx, a, f)
	d.Held = p.held(a, f)
	return d, err
}

// linesOf renders the message for the chosen group's first contacts with the preview
// operation, or says why it cannot.
func (p *Pages) linesOf(ctx context.Context, a persistence.Account, f *web.Form) (previewData, error) {
	acct := a.ID
	groups, err := p.Store.Groups(ctx, acct)
	if err != nil {
		return previewData{}, err
	}
	var g *persistence.Group
	for i := range groups {
		if groups[i].ID.String() == f.Get("group_id") {
			g = &groups[i]
		}
	}
	msg := f.Get("message")
	switch {
	case g == nil:
		return previewData{Note: "Choose a group to preview the message as its contacts will get it."}, nil
	case strings.TrimSpace(msg) == "":
		return previewData{Note: "Write the message to preview it as the contacts of “" + g.Name + "” will get it."}, nil
	}
	pv, err := p.Ops.Preview(ctx, acct, campaignsapi.PreviewInput{GroupID: g.ID, Message: msg, SenderID: given(f, "sender_id"),
		Category: given(f, "category")})
	var prob *api.Problem
	if errors.As(err, &prob) && prob.Status == http.StatusUnprocessableEntity && len(prob.Errors) > 0 {
		return previewData{Note: fieldName(prob.Errors[0].Field) + " " + prob.Errors[0].Message + "."}, nil
	}
	if err != nil {
		return previewData{}, err
	}
	d := previewData{GroupName: g.Name, Total: pv.Total, Promotional: f.Get("category") == "promotional"}
	if d.Promotional {
		d.OptOut = a.OptOutText
	}
	if pv.Total == 0 {
		d.Note = "“" + g.Name + "” has no active contacts: add or import some first."
	}
	for _, l := range pv.Lines {
		name := strings.TrimSpace(l.FirstName + " " + l.LastName)
		d.Lines = append(d.Lines, line{PreviewLine: l, Name: name, Cost: web.KES(l.CostCents)})
	}
	return d, nil
}

// fieldName names a field of the form in a sentence.
func fieldName(f string) string {
	switch f {
	case "sender_id":
		return "The sender ID"
	case "category":
		return "The kind of message"
	}
	return "The message"
}
