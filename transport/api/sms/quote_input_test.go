package sms

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/apitest"
)

// FuzzQuoteRecipients checks the recipients parsing a quote uses (the send's, keeping the
// invalid ones) both ways it is fed: a JSON body's array decoded straight from its bytes, and
// the strings a form gives (SendInput.Recipients). Both must find the same recipients, the
// same invalid ones (index, value, reason) and the same duplicates; every recipient given is
// exactly one of valid, invalid or duplicate; and a send of the same input refuses exactly
// when the quote lists invalid ones.
func FuzzQuoteRecipients(f *testing.F) {
	for _, s := range []string{
		`{"recipients":["0712345678","+254712345678","254733123456","nope","0747123456"],"message":"Hello"}`,
		`{"recipients":[],"message":"x"}`, `{"message":"x"}`, `{"recipients":null,"message":"x"}`,
		`{"recipients":["0712 345 678","07123456789","\u0030712345678",""],"message":"x","reference":"r-1"}`,
		`{"recipients":["0712345678","0712345678"],"message":"“hi” — ok…","sender_id":"ACME"}`,
		`{"recipients":[7],"message":"x"}`, `{"recipients":"0712345678","message":"x"}`,
	} {
		f.Add([]byte(s))
	}
	plan := carriers.DefaultPlan()
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, err := decodeSend(body, plan)
		if err != nil {
			apitest.CheckInputError(t, body, err)
			return
		}
		quoted, qerr := fast.check(plan, true)
		if qerr != nil {
			apitest.CheckInputError(t, body, qerr)
		}
		// The same input as a form gives it: the strings encoding/json reads.
		var ref struct {
			Recipients []string `json:"recipients"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("the fast path decoded %q, which encoding/json rejects: %v", body, err)
		}
		typed := fast
		typed.decoded, typed.Recipients = nil, ref.Recipients
		tq, terr := typed.check(plan, true)
		if (qerr == nil) != (terr == nil) {
			t.Fatalf("body %q: quote from JSON: %v; from strings: %v", body, qerr, terr)
		}
		if qerr != nil {
			return
		}
		if !reflect.DeepEqual(quoted.recipients, tq.recipients) || quoted.duplicates != tq.duplicates || len(quoted.invalid) != len(tq.invalid) {
			t.Fatalf("body %q: JSON path %d valid, %d duplicates, %d invalid; strings %d, %d, %d", body,
				len(quoted.recipients), quoted.duplicates, len(quoted.invalid), len(tq.recipients), tq.duplicates, len(tq.invalid))
		}
		for i, b := range quoted.invalid {
			tb := tq.invalid[i]
			// encoding/json reads invalid UTF-8 as U+FFFD; the fast path keeps the bytes (the
			// quote's JSON writes them as U+FFFD too).
			if b.index != tb.index || b.unsupported != tb.unsupported || utf8.Valid(body) && b.value != tb.value {
				t.Fatalf("body %q: invalid #%d = %+v from JSON, %+v from strings", body, i, b, tb)
			}
			if i > 0 && b.index <= quoted.invalid[i-1].index || b.index >= len(ref.Recipients) {
				t.Fatalf("body %q: invalid recipient index %d out of order or range", body, b.index)
			}
			if _, _, err := plan.Parse([]byte(tb.value)); err == nil {
				t.Fatalf("body %q: %q listed invalid, but it parses", body, tb.value)
			}
		}
		if n := len(quoted.recipients) + len(quoted.invalid) + quoted.duplicates; n != len(ref.Recipients) {
			t.Fatalf("body %q: %d valid + %d invalid + %d duplicates of %d given", body,
				len(quoted.recipients), len(quoted.invalid), quoted.duplicates, len(ref.Recipients))
		}
		// A send of the same body refuses exactly what the quote lists (or has no recipients).
		_, serr := typed.check(plan, false)
		var p *api.Problem
		switch {
		case len(quoted.invalid) == 0 && len(ref.Recipients) > 0 && serr != nil:
			t.Fatalf("body %q: the quote lists nothing invalid, the send refuses: %v", body, serr)
		case len(quoted.invalid) > 0 && (!errors.As(serr, &p) || len(p.Errors) != min(len(quoted.invalid), maxRecipientErrors)):
			t.Fatalf("body %q: the quote lists %d invalid, the send answers %v", body, len(quoted.invalid), serr)
		}
	})
}

// A quote lists what a send refuses, and takes no recipients; the message and the reference
// are checked alike.
func TestQuoteAndSendCheckTheSameInput(t *testing.T) {
	plan := carriers.DefaultPlan()
	in := SendInput{Recipients: []string{"0712345678", "12345", "+254712345678", "0747123456", "0733123456"}, Message: "hi"}
	q, err := in.check(plan, true)
	if err != nil {
		t.Fatalf("quote check: %v", err)
	}
	want := []badRecipient{{index: 1, value: "12345"}, {index: 3, value: "0747123456", unsupported: true}}
	if len(q.recipients) != 2 || q.duplicates != 1 || !reflect.DeepEqual(q.invalid, want) {
		t.Errorf("quote check = %d valid, %d duplicates, invalid %+v; want 2, 1, %+v", len(q.recipients), q.duplicates, q.invalid, want)
	}
	var p *api.Problem
	if _, err := in.check(plan, false); !errors.As(err, &p) || p.Code != "validation_failed" || len(p.Errors) != 2 ||
		p.Errors[0] != (api.FieldError{Field: "recipients[1]", Message: reasonInvalid}) ||
		p.Errors[1] != (api.FieldError{Field: "recipients[3]", Message: reasonUnsupported}) {
		t.Errorf("send check = %v; want 422 naming recipients[1] and recipients[3]", err)
	}

	empty := SendInput{Message: "typed first"}
	if c, err := empty.check(plan, true); err != nil || len(c.recipients) != 0 {
		t.Errorf("quote without recipients = %v; want fine", err)
	}
	if _, err := empty.check(plan, false); !errors.As(err, &p) || p.Errors[0].Field != "recipients" {
		t.Errorf("send without recipients = %v; want 422 naming recipients", err)
	}

	bad := "a\tb"
	long := strings.Repeat("a", maxMessageRunes+1)
	for _, quote := range []bool{false, true} {
		in := SendInput{Recipients: []string{"0712345678"}, Message: long, Reference: &bad}
		_, err := in.check(plan, quote)
		if !errors.As(err, &p) || len(p.Errors) != 2 || p.Errors[0].Field != "message" || p.Errors[1].Field != "reference" ||
			!strings.HasPrefix(p.Errors[0].Message, "must be at most 918 characters (your text; through the shared sender ID the company prefix is added on top and counted in parts and cost)") {
			t.Errorf("check(quote %v) of 919 characters and a tab in the reference = %v", quote, err)
		}
	}
	// What a form can hold and a JSON body cannot get through the decoder: NUL.
	nul := SendInput{Recipients: []string{"0712345678"}, Message: "hi\x00", SenderID: "A\x00"}
	if _, err := nul.check(plan, false); !errors.As(err, &p) || len(p.Errors) != 2 {
		t.Errorf("check of NUL in message and sender_id = %v; want 422 naming both", err)
	}
}

// The send's recipient errors stay at 100, however many are invalid; the quote lists all.
func TestQuoteListsEveryInvalidRecipient(t *testing.T) {
	plan := carriers.DefaultPlan()
	in := SendInput{Message: "hi"}
	for range 300 {
		in.Recipients = append(in.Recipients, "nope")
	}
	if q, err := in.check(plan, true); err != nil || len(q.invalid) != 300 {
		t.Errorf("quote of 300 invalid = %d listed, %v; want 300", len(q.invalid), err)
	}
	var p *api.Problem
	if _, err := in.check(plan, false); !errors.As(err, &p) || len(p.Errors) != maxRecipientErrors ||
		!strings.HasPrefix(p.Detail, "300 of 300 recipients") {
		t.Errorf("send of 300 invalid = %v; want 100 errors", err)
	}
}
