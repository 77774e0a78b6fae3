package payments

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Event is a provider webhook: what happened to which transaction.
type Event struct {
	Event string      `json:"event"` // charge.success, …
	Data  Transaction `json:"data"`
}

// EventChargeSuccess is the webhook of a successful payment.
const EventChargeSuccess = "charge.success"

// ErrMalformedEvent is a webhook body that is not an event we can read.
var ErrMalformedEvent = errors.New("malformed webhook event")

// maxReference bounds a reference in an event: ours are 31 characters.
const maxReference = 100

// ParseEvent reads a webhook body. The body must be one JSON object naming its event; a
// charge.success must carry a reference. Other fields are left for the provider's verify to
// vouch for: an event only tells us which reference to ask about.
func ParseEvent(body []byte) (Event, error) {
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&ev); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformedEvent, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Event{}, fmt.Errorf("%w: data after the JSON object", ErrMalformedEvent)
	}
	if ev.Event == "" || len(ev.Event) > 100 || !utf8.ValidString(ev.Event) {
		return Event{}, fmt.Errorf("%w: no event name", ErrMalformedEvent)
	}
	ev.Data.Reference = strings.TrimSpace(ev.Data.Reference)
	if len(ev.Data.Reference) > maxReference || !utf8.ValidString(ev.Data.Reference) {
		return Event{}, fmt.Errorf("%w: bad reference", ErrMalformedEvent)
	}
	if ev.Event == EventChargeSuccess && ev.Data.Reference == "" {
		return Event{}, fmt.Errorf("%w: %s without a reference", ErrMalformedEvent, ev.Event)
	}
	return ev, nil
}

// Scheme is one way a provider signs its webhooks.
type Scheme interface {
	// Name identifies the scheme in logs.
	Name() string
	// Present reports whether the request carries this scheme's signature at all.
	Present(header func(name string) string) bool
	// Valid checks the signature over the raw body, in constant time.
	Valid(header func(name string) string, body []byte) bool
}

// Schemes accepts a webhook signed by any of its schemes, so a provider's newer scheme can be
// added beside the old one while both are in use.
type Schemes []Scheme

// Verify checks the request's signature: the name of the scheme that vouched for it, or an
// error saying why none did.
func (ss Schemes) Verify(header func(name string) string, body []byte) (string, error) {
	for _, s := range ss {
		if s.Present(header) {
			if s.Valid(header, body) {
				return s.Name(), nil
			}
			return "", fmt.Errorf("%s signature does not match the body", s.Name())
		}
	}
	return "", errors.New("no signature")
}

// PaystackHMAC is Paystack's scheme: X-Paystack-Signature = hex(HMAC-SHA512(raw body, secret key)).
type PaystackHMAC struct{ Secret []byte }

// PaystackSignatureHeader carries PaystackHMAC signatures.
const PaystackSignatureHeader = "X-Paystack-Signature"

// Name implements Scheme.
func (PaystackHMAC) Name() string { return "paystack-hmac-sha512" }

// Present implements Scheme.
func (PaystackHMAC) Present(header func(string) string) bool {
	return header(PaystackSignatureHeader) != ""
}

// Valid implements Scheme.
func (s PaystackHMAC) Valid(header func(string) string, body []byte) bool {
	got, err := hex.DecodeString(strings.TrimSpace(header(PaystackSignatureHeader)))
	if err != nil {
		return false
	}
	return hmac.Equal(got, s.sum(body))
}

func (s PaystackHMAC) sum(body []byte) []byte {
	m := hmac.New(sha512.New, s.Secret)
	m.Write(body)
	return m.Sum(nil)
}

// Sign is the header value that signs body (the sandbox signs its webhooks with it).
func (s PaystackHMAC) Sign(body []byte) string { return hex.EncodeToString(s.sum(body)) }
