// The form's steps: check (the counter without script), review (the confirmation) and send.

package send

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// readForm reads the form; the look-alike fix's button carries the text it suggests.
func readForm(rc *fasthttp.RequestCtx) *web.Form {
	f := web.ReadForm(rc)
	if s, ok := f.Values["use_suggestion"]; ok {
		f.Set("message", s)
		delete(f.Values, "use_suggestion")
	}
	return f
}

// check shows the form again with its counter: the page's answer without script.
func (p *Page) check(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := readForm(rc)
	c, _, err := p.quote(ctx, rc, f)
	if err != nil {
		return err
	}
	if len(rc.Request.Header.Peek("HX-Request")) > 0 { // the counter's request, sent here by a button's formaction
		return p.Views.Fragment(rc, http.StatusOK, "send", "counter", c)
	}
	return p.render(ctx, rc, http.StatusOK, f, c, nil)
}

// confirmData is what the confirmation shows.
type confirmData struct {
	Form    *web.Form // the fields, carried on as hidden inputs
	Counter counter
	Sender  string
	Group   string
	Hidden  []hidden // the form's fields, sent on with the confirmation
}

type hidden struct{ Name, Value string }

// carried are the fields the confirmation sends on.
var carried = []string{"recipients", "group_id", "message", "sender_id", "reference", "category", "idempotency_key"}

// review prices the form and asks to confirm it; numbers a send would refuse, or none at
// all, are shown on the form instead.
func (p *Page) review(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := readForm(rc)
	if f.Get("message") == "" {
		f.AddError("message", "is required")
		return p.render(ctx, rc, http.StatusUnprocessableEntity, f, counter{Empty: true}, nil)
	}
	c, _, err := p.quote(ctx, rc, f)
	if err != nil {
		return err
	}
	if c.Err != nil {
		return p.render(ctx, rc, 0, f, c, c.Err)
	}
	switch {
	case len(c.Q.InvalidRecipients) > 0:
		for _, b := range c.Q.InvalidRecipients {
			f.AddError("recipients", b.Value+": "+b.Reason)
		}
		return p.render(ctx, rc, http.StatusUnprocessableEntity, f, c, nil)
	case c.Q.RecipientsCount == 0 && c.Q.SuppressedCount > 0:
		f.AddError("recipients", "Every number is on your suppression list, so there is no one to send to (nothing was charged).")
		return p.render(ctx, rc, http.StatusUnprocessableEntity, f, c, nil)
	case c.Q.RecipientsCount == 0:
		f.AddError("recipients", "Enter at least one phone number, or choose a group with contacts.")
		return p.render(ctx, rc, http.StatusUnprocessableEntity, f, c, nil)
	}
	d, err := p.load(ctx, web.AccountID(rc), f)
	if err != nil {
		return err
	}
	cd := confirmData{Form: f, Counter: c, Sender: d.Senders[0].Label}
	for _, name := range carried {
		cd.Hidden = append(cd.Hidden, hidden{Name: name, Value: f.Get(name)})
	}
	for _, s := range d.Senders {
		if s.Value == f.Get("sender_id") {
			cd.Sender = s.Label
		}
	}
	for _, g := range d.Groups {
		if g.Value != "" && g.Value == f.Get("group_id") {
			cd.Group = g.Label
		}
	}
	return p.Views.Render(ctx, rc, http.StatusOK, "confirm", &web.Page{Title: "Confirm the send", Nav: "/app/send", Data: cd})
}

// send sends the form, once per Idempotency-Key: submitted again, it sends nothing and lands
// where the first did. A refused send is shown on the form, with its counter.
func (p *Page) send(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := readForm(rc)
	acct := web.AccountID(rc)
	in, err := p.input(ctx, acct, f)
	if err != nil {
		return p.refused(ctx, rc, f, err)
	}
	a, replayed, err := p.Ops.SendOnce(ctx, api.Principal(rc), in, f.Get("idempotency_key"))
	if err != nil {
		if prob := api.ProblemOf(err); prob.Code == "idempotency_key_reused" {
			// The form was sent already, with other fields: this is a new send, with a new key.
			f.Set("idempotency_key", uuid.NewString())
			prob := api.NewProblem("idempotency_key_reused",
				"this form was sent already with other numbers or text; check the message and the numbers, then send again")
			return p.refused(ctx, rc, f, prob)
		}
		return p.refused(ctx, rc, f, fieldErrors(err, in))
	}
	msg := "Sent to " + web.Thousands(int64(a.RecipientsCount)) + " " + plural(a.RecipientsCount, "number", "numbers") + ": " +
		web.Thousands(a.SMSCount) + " SMS, " + web.KES(int64(a.CostKES)) + "."
	if in.Category == "promotional" {
		pr, err := p.promotionOf(ctx, acct, in.Message)
		if err != nil {
			return err
		}
		if pr.Held != "" {
			msg += " " + pr.Held
		}
	}
	if replayed {
		msg = "This message was sent already, once: here it is. " + msg
	}
	p.Site.Flash(rc, "success", msg)
	return api.SeeOther(rc, messagesOf(a.JobID))
}

// refused shows the form again with why the send was refused, and its counter.
func (p *Page) refused(ctx context.Context, rc *fasthttp.RequestCtx, f *web.Form, err error) error {
	c, _, qerr := p.quote(ctx, rc, f)
	if qerr != nil {
		c = counter{Empty: true}
	}
	return p.render(ctx, rc, 0, f, c, err)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
