package sms

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/actors"
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

// Why a recipient cannot be sent to: the send's field error and the quote's reason.
const (
	reasonInvalid     = "not a valid Kenyan mobile number"
	reasonUnsupported = "is on a network Tuma does not reach (only Safaricom, Airtel and Telkom)"
)

// messageTooLong is the field error of a message over 918 characters. The limit is the
// tenant's own text (the spec's 6 SMS pages): the shared sender's company prefix comes on
// top, so 918 GSM-7 characters through it bill 7 parts.
func messageTooLong(n int) string {
	return fmt.Sprintf("must be at most %d characters (your text; through the shared sender ID the company prefix "+
		"is added on top and counted in parts and cost); got %d", maxMessageRunes, n)
}

// SendInput is a send, or the send a quote prices, as its caller wrote it: the body of
// POST /sms/send, or the dashboard's send form. Handler.Send and Handler.Quote check it.
type SendInput struct {
	Recipients []string // as typed, in order: 07…, 01…, 254… or +254… forms, spaces and dashes allowed
	Message    string
	SenderID   string  // an approved sender ID of the account, by id or name; "": the default, else the shared one
	Reference  *string // the caller's correlation id (1-64 printable ASCII); nil: none
	Category   string  // transactional (also ""), or promotional
	// MessageID, for a one-recipient send made by the SMPP server, is the id its message takes
	// (actors.SendRequest.MessageID); never read from a request body.
	MessageID uuid.UUID
	// Receipt, for a send made by the SMPP server, is the delivery receipt its client asked
	// for (actors.SendRequest.Receipt); never read from a request body.
	Receipt persistence.ReceiptMode

	// decoded holds a JSON body's recipients, parsed while the body was decoded (Recipients is
	// then unused): a 10,000-number send is mostly that array, and going through []string
	// would allocate every number twice.
	decoded *recipientList
}

// decodeSend reads a JSON send body. A body that is not JSON is 400, a member of the wrong
// type 422; the values are checked later, by check.
func decodeSend(body []byte, plan *carriers.Plan) (SendInput, error) {
	var in struct {
		Recipients recipientList `json:"recipients"`
		Message    *string       `json:"message"`
		SenderID   *string       `json:"sender_id"`
		Reference  *string       `json:"reference"`
		Category   *string       `json:"category"`
	}
	in.Recipients.plan = plan
	if err := api.ParseJSON(body, &in); err != nil {
		return SendInput{}, err
	}
	out := SendInput{Reference: in.Reference, decoded: &in.Recipients}
	if in.Message != nil {
		out.Message = *in.Message
	}
	if in.SenderID != nil {
		out.SenderID = *in.SenderID
	}
	if in.Category != nil {
		out.Category = *in.Category
		if out.Category == "" { // given, yet empty: not the default
			out.Category = " "
		}
	}
	return out, nil
}

// checkedSend is a SendInput that passed its checks.
type checkedSend struct {
	recipients  []persistence.Recipient // valid, normalised, unique, in first-seen order
	invalid     []badRecipient          // in the order given (a quote lists them; a send refuses them)
	duplicates  int                     // valid recipients given again (in any form) after their first
	message     string
	senderID    string
	reference   *string
	promotional bool
}

// check validates the input for a send, or for a quote. Every recipient is normalised to
// E.164 and given its network; duplicates (after normalisation) count once. A send refuses
// any invalid recipient, naming up to 100 of them; a quote lists them all, and takes no
// recipients at all (a person types the message first). Both refuse a message over 918
// characters and a reference that is not 1-64 printable ASCII characters.
func (in SendInput) check(plan *carriers.Plan, quote bool) (checkedSend, error) {
	rl := in.decoded
	if rl == nil {
		rl = &recipientList{plan: plan, present: true, seen: make(map[uint32]struct{}, min(len(in.Recipients), maxRecipients))}
		for _, r := range in.Recipients {
			rl.add([]byte(r))
		}
	}
	var fe api.FieldErrors
	switch {
	case quote && rl.count <= maxRecipients:
	case !rl.present:
		fe.Add("recipients", "is required: an array of phone numbers")
	case rl.count == 0:
		fe.Add("recipients", "must contain at least one phone number")
	case rl.count > maxRecipients:
		fe.Add("recipients", fmt.Sprintf("must contain at most %d phone numbers (got %d)", maxRecipients, rl.count))
	}
	switch n := utf8.RuneCountInString(in.Message); {
	case in.Message == "":
		fe.Add("message", "is required")
	case !utf8.ValidString(in.Message):
		fe.Add("message", "must be valid UTF-8")
	case strings.ContainsRune(in.Message, 0): // a JSON body's NUL is refused while decoding
		fe.Add("message", "must not contain the NUL character (U+0000)")
	case n > maxMessageRunes:
		fe.Add("message", messageTooLong(n))
	}
	if !utf8.ValidString(in.SenderID) || strings.ContainsRune(in.SenderID, 0) {
		fe.Add("sender_id", "is not an approved, active sender ID of this account")
	}
	if in.Reference != nil && !actors.ValidReference(*in.Reference) {
		fe.Add("reference", fmt.Sprintf("must be 1 to %d printable ASCII characters (space to ~)", actors.MaxReferenceLen))
	}
	promotional := false
	if in.Category != "" {
		var ok bool
		if promotional, ok = api.ParseCategory(in.Category); !ok {
			fe.Add("category", api.CategoryMessage)
		}
	}
	if len(fe) > 0 {
		return checkedSend{}, fe.Err()
	}
	if !quote && len(rl.bad) > 0 {
		return checkedSend{}, rl.refusal()
	}
	return checkedSend{recipients: rl.out, invalid: rl.bad, duplicates: rl.dups, message: in.Message,
		senderID: in.SenderID, reference: in.Reference, promotional: promotional}, nil
}

// badRecipient is a recipient that cannot be sent to.
type badRecipient struct {
	index       int
	value       string // as given
	unsupported bool   // a Kenyan number on a network Tuma does not reach; else no Kenyan mobile number
}

func (b badRecipient) reason() string {
	if b.unsupported {
		return reasonUnsupported
	}
	return reasonInvalid
}

// recipientList parses recipients one by one into normalised, de-duplicated recipients and
// the ones that cannot be sent to. It is the one parser of recipients, whether they come as
// a JSON body's array (decoded straight from its bytes) or as strings.
type recipientList struct {
	plan    *carriers.Plan
	present bool // given at all (a JSON body may leave it out)
	count   int
	out     []persistence.Recipient
	seen    map[uint32]struct{}
	bad     []badRecipient
	dups    int
}

// refusal is a send's 422 for its bad recipients: validation_failed naming up to 100 of them,
// or unsupported_network when every one is a Kenyan number on another network.
func (rl *recipientList) refusal() error {
	code := "validation_failed"
	unsupported := 0
	for _, b := range rl.bad {
		if b.unsupported {
			unsupported++
		}
	}
	if unsupported == len(rl.bad) {
		code = "unsupported_network"
	}
	listed := rl.bad[:min(len(rl.bad), maxRecipientErrors)]
	fe := make(api.FieldErrors, 0, len(listed))
	for _, b := range listed {
		fe.Add(fmt.Sprintf("recipients[%d]", b.index), b.reason())
	}
	p := api.InvalidAs(code, fe...)
	p.Detail = fmt.Sprintf("%d of %d recipients cannot be sent to; nothing was sent or charged", len(rl.bad), rl.count)
	return p
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
		rl.bad = append(rl.bad, badRecipient{index: idx, value: string(raw), unsupported: errors.Is(err, carriers.ErrUnsupportedNetwork)})
		return
	}
	if _, dup := rl.seen[nsn]; dup {
		rl.dups++
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
