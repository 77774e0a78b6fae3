// The campaign operations the dashboard runs: the same rules and engine calls as the
// endpoints, called with a form's values.

package campaigns

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// formKeys keeps the keys of Create apart from the Idempotency-Keys of the account's API
// clients and of its other forms.
const formKeys = "campaign-form:"

// Create creates a campaign as POST /campaigns does, under an idempotency key given as text
// (the dashboard's form sets one per render; "": none). The first call with a key creates;
// a later one with the same key and input creates nothing and returns the first one's
// campaign, replayed true; the same key with another input is 422 idempotency_key_reused.
// Bad input is a *api.Problem naming the fields, as the endpoint answers it.
func (h *Handler) Create(ctx context.Context, accountID uuid.UUID, in Input, key string) (c persistence.Campaign, replayed bool, err error) {
	create := func(k *persistence.IdempotencyKey) error {
		ci, err := h.check(in)
		if err != nil {
			return err
		}
		id, err := h.createCampaignOnce(ctx, accountID, ci, k, "browser")
		if err != nil {
			return err
		}
		c, err = h.store.Campaign(ctx, accountID, id)
		return err
	}
	if key == "" {
		return c, false, create(nil)
	}
	op := api.Op{Scope: accountID, Namespace: formKeys, FromResource: func(ctx context.Context, acct, id uuid.UUID) (any, error) {
		return h.store.Campaign(ctx, acct, id)
	}, Wait: true}
	r, err := h.keys.Do(ctx, op, key, in.fingerprint(), create)
	if r == nil || err != nil {
		return c, r != nil, err
	}
	if v, ok := r.Value.(persistence.Campaign); ok {
		return v, true, nil
	}
	// A key completed by the engine names the campaign, so a replay without one is a fault.
	return c, true, errors.New("replay of a campaign form without its campaign")
}

// Cancel stops a queued, scheduled or sending campaign as POST /campaigns/{id}/cancel does,
// and returns it as it is now (its refund, once settled, in RefundedCents). Another
// account's campaign is persistence.ErrNotFound.
func (h *Handler) Cancel(ctx context.Context, accountID, id uuid.UUID) (persistence.Campaign, error) {
	if err := h.engine.CancelCampaign(ctx, accountID, id); err != nil {
		return persistence.Campaign{}, err
	}
	return h.store.Campaign(ctx, accountID, id)
}

// Report is a campaign's figures, as GET /campaigns/{id}/report gives them.
type Report struct {
	Campaign     persistence.Campaign
	Pending      int     // neither delivered nor failed yet
	DeliveryRate float64 // CONTRACT §7
}

// NewReport is c's report.
func NewReport(c persistence.Campaign) Report {
	return Report{Campaign: c, Pending: max(c.TotalRecipients-c.Delivered-c.Failed, 0),
		DeliveryRate: DeliveryRate(c.Delivered, c.TotalRecipients)}
}

// PreviewSize is how many of a group's contacts a preview renders.
const PreviewSize = 3

// Preview is a campaign's message as the first contacts of its group would receive it.
type Preview struct {
	Total int64 // the group's active contacts
	Lines []PreviewLine
}

// PreviewLine is one contact's message as it would be sent: the template with its merge tags
// rendered by the engine's own function, any company prefix of the shared sender ID and, when
// promotional, the opt-out text; its parts and cost as the engine quotes them.
type PreviewLine struct {
	Phone, FirstName, LastName string
	Text                       string
	Parts                      int
	Unicode                    bool  // UCS-2: fewer characters a part
	CostCents                  int64 // what this contact's message costs
	Suppressed                 bool  // on the suppression list: left out, not charged
	Unreachable                bool  // on no network Tuma reaches: not a recipient
}

// PreviewInput is what a preview renders: the message for a group's contacts, with the sender
// and category the campaign would have (as Input's: nil is the default route, transactional).
type PreviewInput struct {
	GroupID  uuid.UUID
	Message  string
	SenderID *string
	Category *string
}

// Preview renders the message for the newest PreviewSize active contacts of one of the
// account's groups (another account's group has none), each priced by the engine's quote as
// its own send of that contact's text. Input the rules refuse (the message, the category, a
// sender not approved) is a 422 naming the field.
func (h *Handler) Preview(ctx context.Context, accountID uuid.UUID, in PreviewInput) (Preview, error) {
	var fe api.FieldErrors
	if msg := checkMessage(&in.Message); msg != "" {
		fe.Add("message", msg)
	}
	promo := false
	if in.Category != nil {
		var ok bool
		if promo, ok = api.ParseCategory(*in.Category); !ok {
			fe.Add("category", api.CategoryMessage)
		}
	}
	if err := fe.Err(); err != nil {
		return Preview{}, err
	}
	req := actors.SendRequest{AccountID: accountID, Promotional: promo}
	if in.SenderID != nil && *in.SenderID != "" {
		snd, err := h.approvedSender(ctx, accountID, *in.SenderID)
		if err != nil {
			return Preview{}, err
		}
		req.Sender = &snd
	}
	cs, total, err := h.store.ListContacts(ctx, accountID, persistence.ContactFilter{GroupID: &in.GroupID},
		persistence.Page{Number: 1, Size: PreviewSize})
	if err != nil {
		return Preview{}, err
	}
	p := Preview{Total: total}
	for _, c := range cs {
		text := actors.RenderMergeTags(in.Message, c.FirstName, c.LastName)
		l := PreviewLine{Phone: c.Phone, FirstName: c.FirstName, LastName: c.LastName, Text: text}
		nsn, network, err := h.plan.Parse([]byte(c.Phone))
		if err != nil { // left out of the campaign's audience, as createCampaignOnce leaves it
			seg := carriers.Segment(text)
			l.Parts, l.Unicode, l.Unreachable = seg.Parts, seg.Encoding == carriers.UCS2, true
			p.Lines = append(p.Lines, l)
			continue
		}
		// The opt-out text is left off when the rendered text already says it, where a
		// campaign looks at its template: the same but for a name that spells it.
		req.Message, req.Recipients = text, []persistence.Recipient{{NSN: nsn, Network: network}}
		q, err := h.engine.Quote(ctx, req)
		if err != nil {
			return Preview{}, err
		}
		l.Text, l.Parts, l.Unicode, l.CostCents = q.MessageAsSent, q.Parts, q.Encoding == carriers.UCS2, q.CostCents
		l.Suppressed = q.Suppressed > 0
		p.Lines = append(p.Lines, l)
	}
	return p, nil
}

// MaxMessageRunes is the longest message a campaign takes, in characters, as written.
const MaxMessageRunes = maxMessageRunes
