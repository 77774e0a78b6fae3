package sms

import (
	"context"
	"net/http"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Quote is what a send of the same input would store and debit now (POST /sms/quote,
// CONTRACT §12). MessageAsSent, Encoding, Characters and Parts describe the text of the
// network with the most parts among those the recipients are on (actors.Quote); CostKES counts
// every recipient's own text.
type Quote struct {
	RecipientsCount   int                `json:"recipients_count"` // valid and unique: the ones a send would message
	InvalidRecipients []InvalidRecipient `json:"invalid_recipients"`
	DuplicatesRemoved int                `json:"duplicates_removed"`
	SuppressedCount   int                `json:"suppressed_count"` // valid recipients left out: on the suppression list
	ByNetwork         ByNetwork          `json:"by_network"`
	MessageAsSent     string             `json:"message_as_sent"` // any company prefix included
	Encoding          string             `json:"encoding"`        // gsm7 | ucs2
	Characters        int                `json:"characters"`      // of MessageAsSent
	Parts             int                `json:"parts"`           // of MessageAsSent, per recipient
	CostKES           api.KES            `json:"cost_kes"`
	BalanceKES        api.KES            `json:"balance_kes"` // what a send is checked against: the wallet less what sends being accepted hold
	Sufficient        bool               `json:"sufficient"`  // CostKES <= BalanceKES: a send would not be refused for want of money
	Suggestion        *Suggestion        `json:"suggestion"`  // nil: none
}

// InvalidRecipient is a recipient a send would refuse: its index in the recipients given,
// the value as given, and why.
type InvalidRecipient struct {
	Index  int    `json:"index"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// ByNetwork counts the valid, unique recipients on each network.
type ByNetwork struct {
	Safaricom int `json:"safaricom"`
	Airtel    int `json:"airtel"`
	Telkom    int `json:"telkom"`
}

// Suggestion is the same send with look-alike characters replaced (curly quotes, dashes,
// ellipsis, non-breaking space …), offered when that makes UCS-2 text GSM-7; never applied
// silently. Message is the caller's text with the replacements (not prefixed): send it instead.
type Suggestion struct {
	Replacements []Replacement `json:"replacements"`
	Message      string        `json:"message"`
	Encoding     string        `json:"encoding"` // gsm7
	Parts        int           `json:"parts"`
	CostKES      api.KES       `json:"cost_kes"`
}

// Replacement is one look-alike character replaced Count times.
type Replacement struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// Quote checks the input as a send would, and says what sending it now would store and debit,
// writing and reserving nothing. Unlike a send, invalid recipients are listed, not refused,
// and no recipients at all is fine; the message, reference and sender_id are checked as a
// send checks them. Bad input is a *api.Problem (as POST /sms/quote answers it).
func (h *Handler) Quote(ctx context.Context, p auth.Principal, in SendInput) (Quote, error) {
	c, req, err := h.request(ctx, p, in, true)
	if err != nil {
		return Quote{}, err
	}
	q, err := h.engine.Quote(ctx, req)
	if err != nil {
		return Quote{}, err
	}
	out := Quote{
		RecipientsCount: q.Recipients, SuppressedCount: q.Suppressed, InvalidRecipients: make([]InvalidRecipient, len(c.invalid)),
		DuplicatesRemoved: c.duplicates,
		ByNetwork:         ByNetwork{Safaricom: q.ByNetwork[carriers.Safaricom], Airtel: q.ByNetwork[carriers.Airtel], Telkom: q.ByNetwork[carriers.Telkom]},
		MessageAsSent:     q.MessageAsSent, Encoding: q.Encoding.String(), Characters: q.Characters, Parts: q.Parts,
		CostKES: api.KES(q.CostCents), BalanceKES: api.KES(q.AvailableCents), Sufficient: q.Sufficient,
		Suggestion: newSuggestion(q.Suggestion),
	}
	for i, b := range c.invalid {
		out.InvalidRecipients[i] = InvalidRecipient{Index: b.index, Value: b.value, Reason: b.reason()}
	}
	return out, nil
}

// newSuggestion is the quote's suggestion, or nil when its message is not one a send takes:
// empty (the message was only invisible characters) or over 918 characters (each "…" became
// "...").
func newSuggestion(s *actors.QuoteSuggestion) *Suggestion {
	if s == nil || s.Message == "" || utf8.RuneCountInString(s.Message) > maxMessageRunes {
		return nil
	}
	out := &Suggestion{Replacements: make([]Replacement, len(s.Replacements)), Message: s.Message,
		Encoding: s.Encoding.String(), Parts: s.Parts, CostKES: api.KES(s.CostCents)}
	for i, r := range s.Replacements {
		out.Replacements[i] = Replacement{From: r.From, To: r.To, Count: r.Count}
	}
	return out
}

// quote answers POST /sms/quote: the body of POST /sms/send, priced. It takes no
// Idempotency-Key, as it changes nothing.
func (h *Handler) quote(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	in, err := decodeSend(rc.PostBody(), h.plan)
	if err != nil {
		return err
	}
	q, err := h.Quote(ctx, api.Principal(rc), in)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, q)
}
