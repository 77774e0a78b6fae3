// A campaign as asked: POST /campaigns' body or the dashboard's form, checked by one set of
// rules.

package campaigns

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/transport/api"
)

// Input is a campaign as asked; a nil field was not given. ScheduledAt is RFC 3339; SenderID
// an approved sender ID's id or name (none: the account's default route).
type Input struct {
	Name        *string `json:"name"`
	Message     *string `json:"message"`
	GroupID     *string `json:"group_id"`
	SenderID    *string `json:"sender_id"`
	ScheduledAt *string `json:"scheduled_at"`
	Reference   *string `json:"reference"`
	Category    *string `json:"category"`
}

// campaignInput is an Input, checked.
type campaignInput struct {
	name, message string
	groupID       uuid.UUID
	senderID      string
	scheduledAt   *time.Time
	reference     *string
	promotional   bool
}

func (h *Handler) parseCampaign(rc *fasthttp.RequestCtx) (campaignInput, error) {
	var in Input
	if err := api.DecodeJSON(rc, &in); err != nil {
		return campaignInput{}, err
	}
	return h.check(in)
}

// check applies the rules of a campaign's fields: a 422 naming every invalid one.
func (h *Handler) check(in Input) (campaignInput, error) {
	var out campaignInput
	var fe api.FieldErrors
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		fe.Add("name", "is required")
	} else if out.name = strings.TrimSpace(*in.Name); utf8.RuneCountInString(out.name) > maxCampaignName {
		fe.Add("name", "must be at most 100 characters")
	}
	if msg := checkMessage(in.Message); msg != "" {
		fe.Add("message", msg)
	} else {
		out.message = *in.Message
	}
	if in.GroupID == nil {
		fe.Add("group_id", "is required")
	} else if id, err := uuid.Parse(*in.GroupID); err != nil {
		fe.Add("group_id", "must be the id of one of your groups")
	} else {
		out.groupID = id
	}
	if in.SenderID != nil {
		out.senderID = strings.TrimSpace(*in.SenderID)
	}
	if in.ScheduledAt != nil {
		if at, err := time.Parse(time.RFC3339, *in.ScheduledAt); err != nil {
			fe.Add("scheduled_at", "must be an RFC 3339 date and time, e.g. 2026-12-01T09:00:00Z")
		} else if !at.After(h.now()) {
			fe.Add("scheduled_at", "must be in the future")
		} else {
			at = at.UTC()
			out.scheduledAt = &at
		}
	}
	if in.Reference != nil && !actors.ValidReference(*in.Reference) {
		fe.Add("reference", fmt.Sprintf("must be 1 to %d printable ASCII characters (space to ~)", actors.MaxReferenceLen))
	}
	out.reference = in.Reference
	if in.Category != nil {
		promo, ok := api.ParseCategory(*in.Category)
		if !ok {
			fe.Add("category", api.CategoryMessage)
		}
		out.promotional = promo
	}
	return out, fe.Err()
}

// checkMessage is what is wrong with a campaign's message ("": nothing).
func checkMessage(m *string) string {
	switch {
	case m == nil || strings.TrimSpace(*m) == "":
		return "is required"
	case utf8.RuneCountInString(*m) > maxMessageRunes:
		return fmt.Sprintf("must be at most %d characters (your text; through the shared sender ID the company "+
			"prefix is added on top and counted in parts and cost); got %d", maxMessageRunes, utf8.RuneCountInString(*m))
	case strings.TrimSpace(actors.RenderMergeTags(*m, "", "")) == "":
		return "must have text besides its merge tags"
	}
	return ""
}

// fingerprint identifies the input, for a form's idempotency key: the same key with another
// input is refused.
func (in Input) fingerprint() []byte {
	h := sha256.New()
	for _, f := range []*string{in.Name, in.Message, in.GroupID, in.SenderID, in.ScheduledAt, in.Reference} {
		if f == nil { // length-prefixed, and absent apart from empty: no two inputs write the same bytes
			h.Write([]byte{0})
			continue
		}
		h.Write([]byte{1})
		h.Write(binary.AppendUvarint(nil, uint64(len(*f))))
		io.WriteString(h, *f)
	}
	if in.Category != nil { // last, and only when given: keys stored before campaigns had one still match
		h.Write(binary.AppendUvarint(nil, uint64(len(*in.Category))))
		io.WriteString(h, *in.Category)
	}
	return h.Sum(nil)
}
