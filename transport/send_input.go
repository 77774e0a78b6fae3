package transport

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// Limits of a send (spec and CONTRACT §4).
const (
	maxRecipients      = 10_000
	maxMessageRunes    = 918
	maxRecipientErrors = 100
)

type sendInput struct {
	recipients []persistence.Recipient // normalised, unique, in first-seen order
	message    string
	senderID   string // "" when omitted or null
}

// parseSend decodes and validates a send body. Every recipient is normalised to E.164 and
// given its network; duplicates (after normalisation) are sent once. Any invalid recipient
// rejects the whole send, naming up to 100 of them.
func parseSend(body []byte, plan *carriers.Plan) (sendInput, error) {
	var in struct {
		Recipients []string `json:"recipients"`
		Message    *string  `json:"message"`
		SenderID   *string  `json:"sender_id"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return sendInput{}, err
	}
	var fe fieldErrors
	switch {
	case in.Recipients == nil:
		fe.add("recipients", "is required: an array of phone numbers")
	case len(in.Recipients) == 0:
		fe.add("recipients", "must contain at least one phone number")
	case len(in.Recipients) > maxRecipients:
		fe.add("recipients", fmt.Sprintf("must contain at most %d phone numbers (got %d)", maxRecipients, len(in.Recipients)))
	}
	switch {
	case in.Message == nil || *in.Message == "":
		fe.add("message", "is required")
	case !utf8.ValidString(*in.Message):
		fe.add("message", "must be valid UTF-8")
	case utf8.RuneCountInString(*in.Message) > maxMessageRunes:
		fe.add("message", fmt.Sprintf("must be at most %d characters (6 SMS parts); got %d", maxMessageRunes, utf8.RuneCountInString(*in.Message)))
	}
	if len(fe) > 0 {
		return sendInput{}, fe.err()
	}
	out := sendInput{message: *in.Message, recipients: make([]persistence.Recipient, 0, len(in.Recipients))}
	if in.SenderID != nil {
		out.senderID = *in.SenderID
	}
	seen := make(map[uint32]struct{}, len(in.Recipients))
	var bad fieldErrors
	nInvalid, nUnsupported := 0, 0
	for i, raw := range in.Recipients {
		n, err := plan.Normalize(raw)
		if err != nil {
			if errors.Is(err, carriers.ErrUnsupportedNetwork) {
				nUnsupported++
			} else {
				nInvalid++
			}
			if len(bad) < maxRecipientErrors {
				msg := "not a valid Kenyan mobile number"
				if errors.Is(err, carriers.ErrUnsupportedNetwork) {
					msg = "is on a network Tuma does not reach (only Safaricom, Airtel and Telkom)"
				}
				bad.add(fmt.Sprintf("recipients[%d]", i), msg)
			}
			continue
		}
		nsn, _ := persistence.ParseE164(n.E164)
		if _, dup := seen[nsn]; dup {
			continue
		}
		seen[nsn] = struct{}{}
		out.recipients = append(out.recipients, persistence.Recipient{NSN: nsn, Network: n.Network})
	}
	if len(bad) > 0 {
		p := invalid(bad...)
		if nInvalid == 0 {
			p.Code = "unsupported_network"
		}
		p.Detail = fmt.Sprintf("%d of %d recipients cannot be sent to; nothing was sent or charged", nInvalid+nUnsupported, len(in.Recipients))
		return sendInput{}, p
	}
	return out, nil
}
