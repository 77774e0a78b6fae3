package sms

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/apitest"
)

// parseSend decodes and checks a send body as POST /sms/send does.
func parseSend(body []byte, plan *carriers.Plan) (checkedSend, error) {
	in, err := decodeSend(body, plan)
	if err != nil {
		return checkedSend{}, err
	}
	return in.check(plan, false)
}

func FuzzParseSend(f *testing.F) {
	for _, s := range []string{
		`{"recipients":["0712345678","+254712345678","254733123456"],"message":"Hello"}`,
		`{"recipients":["0747123456"],"message":"x"}`,
		`{"recipients":["nope"],"message":"x","sender_id":"ACME"}`,
		`{"recipients":[],"message":""}`, `{"recipients":null}`, `{"message":"😀"}`,
		`{"recipients":[7],"message":"x"}`, `{"recipients":"0712345678"}`, `{"recipients":["0712345678"],"message":"x","sender_id":null}`,
	} {
		f.Add([]byte(s))
	}
	plan := carriers.DefaultPlan()
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseSend(body, plan)
		if err != nil {
			apitest.CheckInputError(t, body, err)
			return
		}
		if n := len(in.recipients); n < 1 || n > maxRecipients {
			t.Fatalf("accepted %d recipients", n)
		}
		seen := map[uint32]bool{}
		for _, r := range in.recipients {
			if seen[r.NSN] {
				t.Fatalf("recipient %d twice", r.NSN)
			}
			seen[r.NSN] = true
			if r.Network < carriers.Safaricom || r.Network > carriers.Telkom {
				t.Fatalf("recipient %d on network %v", r.NSN, r.Network)
			}
			if n, err := plan.Normalize(r.E164()); err != nil || n.Network != r.Network {
				t.Fatalf("accepted recipient %s does not normalise back: %v", r.E164(), err)
			}
		}
		if n := utf8.RuneCountInString(in.message); n < 1 || n > maxMessageRunes || !utf8.ValidString(in.message) {
			t.Fatalf("accepted message of %d characters", n)
		}
		// Differential: the streaming recipients decoder must agree with the standard one.
		var ref struct {
			Recipients []string `json:"recipients"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("fast path accepted %q, which encoding/json rejects: %v", body, err)
		}
		var want []uint32
		unique := map[uint32]bool{}
		for _, r := range ref.Recipients {
			n, err := plan.Normalize(r)
			if err != nil {
				t.Fatalf("fast path accepted %q, but %q does not normalise: %v", body, r, err)
			}
			nsn, _ := persistence.ParseE164(n.E164)
			if !unique[nsn] {
				unique[nsn] = true
				want = append(want, nsn)
			}
		}
		if len(want) != len(in.recipients) {
			t.Fatalf("body %q: %d recipients; encoding/json + Normalize give %d", body, len(in.recipients), len(want))
		}
		for i, r := range in.recipients {
			if r.NSN != want[i] {
				t.Fatalf("body %q: recipient %d = %d; want %d", body, i, r.NSN, want[i])
			}
		}
	})
}

// PostgreSQL cannot store U+0000: a send with one is a 422 naming the field, before anything
// reaches the store (it was a 500, and a send with it failed its whole group commit, other
// tenants' sends included).
func TestNulInABodyIsRefused(t *testing.T) {
	apitest.CheckNulRefused(t, map[string]func() error{
		"send": func() error {
			_, err := parseSend([]byte(`{"recipients":["0712345678"],"message":"hi\u0000"}`), carriers.DefaultPlan())
			return err
		},
	})
}

// A recipients value of the wrong type names the field once, and the JSON type it got, as
// encoding/json says it of any other field (message) — the first time and every time: the
// error was one value shared by every request, and each decode added the field's path to it
// again (recipients.recipients: must be an array, not value).
func TestRecipientsOfTheWrongType(t *testing.T) {
	plan := carriers.DefaultPlan()
	for round := range 3 {
		for body, want := range map[string]api.FieldError{
			`{"recipients":"0712345678","message":"hi"}`:      {Field: "recipients", Message: "must be an array, not a JSON string"},
			`{"recipients":254712345678,"message":"hi"}`:      {Field: "recipients", Message: "must be an array, not a JSON number"},
			`{"recipients":{"a":"0712345678"},"message":"x"}`: {Field: "recipients", Message: "must be an array, not a JSON object"},
			`{"recipients":true,"message":"hi"}`:              {Field: "recipients", Message: "must be an array, not a JSON bool"},
			`{"recipients":["0712345678",7],"message":"hi"}`:  {Field: "recipients", Message: "must be a string, not a JSON number"},
			`{"recipients":[["0712345678"]],"message":"hi"}`:  {Field: "recipients", Message: "must be a string, not a JSON array"},
			`{"recipients":["0712345678"],"message":5}`:       {Field: "message", Message: "must be a string, not a JSON number"},
		} {
			_, err := parseSend([]byte(body), plan)
			var p *api.Problem
			if !errors.As(err, &p) || p.Status != 422 || len(p.Errors) != 1 || p.Errors[0] != want {
				t.Errorf("round %d: parseSend(%s) = %v; want 422 with %+v", round+1, body, err, want)
			}
		}
	}
}
