// The live counter: what the message and the numbers come to, from the quote.

package send

import (
	"context"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/web"
)

// maxInvalidShown bounds the invalid numbers the counter lists; it counts them all.
const maxInvalidShown = 10

// counter is the quote as the form shows it.
type counter struct {
	Empty    bool     // no message yet: nothing to count
	Problems []string // why the input cannot be priced (a message too long, a bad reference …)
	Err      error    // that problem, for the form's fields
	Q        sms.Quote
	Encoding string // in words
	Chars    string // characters, formatted
	Numbers  string // valid recipients, formatted
	Cost     string
	Balance  string
	After    string // the balance after the send
	Short    bool   // the balance cannot cover it
	Invalid  []sms.InvalidRecipient
	More     int // invalid numbers not listed
	Suggest  *suggestion
	Promo    *promotion // nil: a transactional send
}

// suggestion is the look-alike fix offered: the text with the replacements, and what it costs.
type suggestion struct {
	Message string
	Changes string // "’ → ' (2), … → ... (1)"
	Parts   int
	Cost    string
}

// newCounter shows a quote.
func newCounter(q sms.Quote) counter {
	c := counter{Q: q, Encoding: encodingName(q.Encoding), Chars: web.Thousands(int64(q.Characters)),
		Numbers: web.Thousands(int64(q.RecipientsCount)), Cost: web.KES(int64(q.CostKES)), Balance: web.KES(int64(q.BalanceKES)),
		After: web.KES(int64(q.BalanceKES - q.CostKES)), Short: !q.Sufficient}
	c.Invalid = q.InvalidRecipients
	if len(c.Invalid) > maxInvalidShown {
		c.Invalid, c.More = c.Invalid[:maxInvalidShown], len(c.Invalid)-maxInvalidShown
	}
	if s := q.Suggestion; s != nil {
		var ch []string
		for _, r := range s.Replacements {
			ch = append(ch, show(r.From)+" → "+show(r.To)+" ("+web.Thousands(int64(r.Count))+")")
		}
		c.Suggest = &suggestion{Message: s.Message, Changes: strings.Join(ch, ", "), Parts: s.Parts, Cost: web.KES(int64(s.CostKES))}
	}
	return c
}

// show names a character people cannot see.
func show(s string) string {
	switch s {
	case "\u00a0":
		return "non-breaking space"
	case " ":
		return "space"
	}
	return s
}

func encodingName(e string) string {
	if e == "ucs2" {
		return "Unicode (UCS-2): 70 characters in one SMS, 67 per part after"
	}
	return "GSM-7: 160 characters in one SMS, 153 per part after"
}

// quote prices the form's input. A problem the person can fix (422: a message too long, a
// bad reference or group) is shown in the counter rather than returned.
func (p *Page) quote(ctx context.Context, rc *fasthttp.RequestCtx, f *web.Form) (counter, sms.SendInput, error) {
	if f.Get("message") == "" {
		return counter{Empty: true}, sms.SendInput{}, nil
	}
	in, err := p.input(ctx, web.AccountID(rc), f)
	if err == nil {
		var q sms.Quote
		q, err = p.Ops.Quote(ctx, api.Principal(rc), in)
		if err == nil {
			c := newCounter(q)
			if in.Category == "promotional" {
				if c.Promo, err = p.promotionOf(ctx, web.AccountID(rc), in.Message); err != nil {
					return counter{}, in, err
				}
			}
			return c, in, nil
		}
	}
	prob := api.ProblemOf(err)
	if prob.Status != http.StatusUnprocessableEntity && prob.Status != http.StatusBadRequest {
		return counter{}, in, err
	}
	c := counter{Err: prob}
	for _, e := range prob.Errors {
		c.Problems = append(c.Problems, fieldLabel(e.Field)+" "+e.Message+".")
	}
	if len(prob.Errors) == 0 {
		c.Problems = append(c.Problems, prob.Detail)
	}
	return c, in, nil
}

func fieldLabel(f string) string {
	switch f {
	case "message":
		return "The message"
	case "reference":
		return "The reference"
	case "sender_id":
		return "The sender"
	case "group_id":
		return "The group"
	}
	return "The numbers:"
}

// counter answers the form's htmx request as the person types: the counter alone.
func (p *Page) counter(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, _, err := p.quote(ctx, rc, web.ReadForm(rc))
	if err != nil {
		return err
	}
	return p.Views.Fragment(rc, http.StatusOK, "send", "counter", c)
}
