package sms

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
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
		Recipients recipientList `json:"recipients"`
		Message    *string       `json:"message"`
		SenderID   *string       `json:"sender_id"`
	}
	in.Recipients.plan = plan
	if err := api.ParseJSON(body, &in); err != nil {
		return sendInput{}, err
	}
	rl := &in.Recipients
	var fe api.FieldErrors
	switch {
	case !rl.present:
		fe.Add("recipients", "is required: an array of phone numbers")
	case rl.count == 0:
		fe.Add("recipients", "must contain at least one phone number")
	case rl.count > maxRecipients:
		fe.Add("recipients", fmt.Sprintf("must contain at most %d phone numbers (got %d)", maxRecipients, rl.count))
	}
	switch {
	case in.Message == nil || *in.Message == "":
		fe.Add("message", "is required")
	case !utf8.ValidString(*in.Message):
		fe.Add("message", "must be valid UTF-8")
	case utf8.RuneCountInString(*in.Message) > maxMessageRunes:
		fe.Add("message", fmt.Sprintf("must be at most %d characters (6 SMS parts); got %d", maxMessageRunes, utf8.RuneCountInString(*in.Message)))
	}
	if len(fe) > 0 {
		return sendInput{}, fe.Err()
	}
	if len(rl.bad) > 0 {
		code := "validation_failed"
		if rl.nInvalid == 0 {
			code = "unsupported_network"
		}
		p := api.InvalidAs(code, rl.bad...)
		p.Detail = fmt.Sprintf("%d of %d recipients cannot be sent to; nothing was sent or charged", rl.nInvalid+rl.nUnsupported, rl.count)
		return sendInput{}, p
	}
	out := sendInput{message: *in.Message, recipients: rl.out}
	if in.SenderID != nil {
		out.senderID = *in.SenderID
	}
	return out, nil
}

// recipientList decodes the recipients array straight into normalised, de-duplicated
// recipients: a 10,000-number send is mostly this array, and going through []string would
// allocate every number twice.
type recipientList struct {
	plan                   *carriers.Plan
	present                bool
	count                  int
	out                    []persistence.Recipient
	seen                   map[uint32]struct{}
	bad                    api.FieldErrors
	nInvalid, nUnsupported int
}

// UnmarshalJSON receives the array's bytes, already checked to be valid JSON. Anything but an
// array of strings is the error encoding/json gives a []string field.
func (rl *recipientList) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	rl.present = true
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return notOfType[[]string](data, i)
	}
	rl.seen = make(map[uint32]struct{}, min(len(data)/12, maxRecipients))
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return nil
	}
	for i < len(data) {
		if data[i] != '"' {
			return notOfType[string](data, i)
		}
		end := i + 1
		escaped := false
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				escaped = true
				end++
			}
			end++
		}
		raw := data[i+1 : end]
		if escaped { // rare: let the standard decoder resolve the escapes
			var s string
			if err := json.Unmarshal(data[i:end+1], &s); err != nil {
				return err
			}
			raw = []byte(s)
		}
		rl.add(raw)
		i = skipSpace(data, end+1)
		if i < len(data) && data[i] == ']' {
			return nil
		}
		if i >= len(data) || data[i] != ',' {
			return notOfType[[]string](data, i)
		}
		i = skipSpace(data, i+1)
	}
	return notOfType[[]string](data, i)
}

// notOfType is the error of a value at data[i] that is not a T. It names no field: the decoder
// adds the path of the field being decoded (one named here was doubled); and it is made anew
// for each value, as the decoder writes that path into it.
func notOfType[T any](data []byte, i int) error {
	return &json.UnmarshalTypeError{Value: jsonKind(data, i), Type: reflect.TypeFor[T]()}
}

// jsonKind names the kind of the JSON value at data[i] as encoding/json does in its errors.
func jsonKind(data []byte, i int) string {
	if i >= len(data) {
		return ""
	}
	switch data[i] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func (rl *recipientList) add(raw []byte) {
	idx := rl.count
	rl.count++
	if rl.count > maxRecipients {
		return // reported as too many; no point normalising the rest
	}
	nsn, network, err := rl.plan.Parse(raw)
	if err != nil {
		msg := "not a valid Kenyan mobile number"
		if errors.Is(err, carriers.ErrUnsupportedNetwork) {
			rl.nUnsupported++
			msg = "is on a network Tuma does not reach (only Safaricom, Airtel and Telkom)"
		} else {
			rl.nInvalid++
		}
		if len(rl.bad) < maxRecipientErrors {
			rl.bad.Add(fmt.Sprintf("recipients[%d]", idx), msg)
		}
		return
	}
	if _, dup := rl.seen[nsn]; dup {
		return
	}
	rl.seen[nsn] = struct{}{}
	rl.out = append(rl.out, persistence.Recipient{NSN: nsn, Network: network})
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
