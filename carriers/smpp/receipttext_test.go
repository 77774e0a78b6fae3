package smpp

import (
	"testing"
	"time"
)

func TestParseReceiptText(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 1, 0, 0, time.UTC)
	cases := []struct {
		in               string
		id, stat, err, x string
		state            MessageState
		done             time.Time
	}{
		{"id:1a2b3c sub:001 dlvrd:001 submit date:2611241200 done date:2611241201 stat:DELIVRD err:000 text:Hello there",
			"1a2b3c", "DELIVRD", "000", "Hello there", StateDelivered, at},
		{"ID:0001715004 Sub:001 Dlvrd:000 Submit Date:261124120000 Done Date:261124120100 Stat:UNDELIV Err:001 Text:Hi: call 0712 345",
			"0001715004", "UNDELIV", "001", "Hi: call 0712 345", StateUndeliverable, at},
		{"id:abc stat:delivered", "abc", "DELIVERED", "", "", StateDelivered, time.Time{}},
		{"id:abc  dlrtype:1  stat:EXPIRED err:0\r\n", "abc", "EXPIRED", "0", "", StateExpired, time.Time{}},
		{"stat:REJECTD id:x-9 err:0B\x00", "x-9", "REJECTD", "0B", "", StateRejected, time.Time{}},
		{"id:q stat:WHATEVER", "q", "WHATEVER", "", "", 0, time.Time{}},
	}
	for _, c := range cases {
		r, ok := ParseReceiptText([]byte(c.in))
		if !ok || r.ID != c.id || r.Stat != c.stat || r.Err != c.err || r.Text != c.x || r.State != c.state || !r.Done.Equal(c.done) {
			t.Errorf("%q: %+v %v", c.in, r, ok)
		}
	}
	for _, in := range []string{"", "id:", "stat:DELIVRD", "id:abc", "\x00\x01\x02", "text:id:abc stat:DELIVRD"} {
		if r, ok := ParseReceiptText([]byte(in)); ok {
			t.Errorf("%q read as %+v", in, r)
		}
	}
	long := make([]byte, maxReceiptText+1)
	if _, ok := ParseReceiptText(long); ok {
		t.Error("an over-long receipt was read")
	}
}

func TestStates(t *testing.T) {
	for s := StateEnroute; s <= StateRejected; s++ {
		got, ok := StateFromStat(s.String())
		if !ok || got != s {
			t.Errorf("%s reads back as %v", s, got)
		}
		if want := s != StateEnroute && s != StateAccepted; s.Final() != want {
			t.Errorf("%s final = %v", s, s.Final())
		}
	}
	if MessageState(9).Final() || MessageState(0).Final() || MessageState(9).String() != "STATE(9)" {
		t.Error("out-of-range states")
	}
}

func TestReceiptIDs(t *testing.T) {
	cases := []struct {
		in   string
		form MessageIDForm
		want string
	}{
		{"0001A2B", IDSame, "1a2b"},
		{"  ABC  ", IDSame, "abc"},
		{"0000", IDSame, "0"},
		{"msg-12_X", IDSame, "msg-12_x"},
		{"0001715004", IDHexInRespDecInReceipt, "1a2b3c"},
		{"1A2B3C", IDDecInRespHexInReceipt, "1715004"},
		{"99999999999999999999999", IDHexInRespDecInReceipt, "99999999999999999999999"},
		{"not-dec", IDHexInRespDecInReceipt, "not-dec"},
	}
	for _, c := range cases {
		if got := ReceiptID(c.in, c.form); got != c.want {
			t.Errorf("ReceiptID(%q, %s) = %q, want %q", c.in, c.form, got, c.want)
		}
	}
	if NormalizeID("001A2B3C") != NormalizeID("1a2b3c") {
		t.Error("case and zero padding are not normalised away")
	}
	for _, w := range []string{"same", "hex-dec", "dec-hex"} {
		if f, err := ParseMessageIDForm(w); err != nil || f.String() != w {
			t.Errorf("%s: %v %v", w, f, err)
		}
	}
	if _, err := ParseMessageIDForm("roman"); err == nil {
		t.Error("roman accepted")
	}
}

func FuzzParseReceiptText(f *testing.F) {
	for _, s := range []string{
		"id:1a2b3c sub:001 dlvrd:001 submit date:2611241200 done date:2611241201 stat:DELIVRD err:000 text:Hello",
		"ID:0001715004 Stat:UNDELIV Err:001 Text:x",
		"id:abc  dlrtype:1  stat:EXPIRED err:0\r\n",
		"stat:REJECTD id:x-9\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := ParseReceiptText(b)
		if ok && (r.ID == "" || r.Stat == "" || len(r.ID) > len(b)) {
			t.Fatalf("%+v from %q", r, b)
		}
		r2, ok2 := ParseReceiptText(b)
		if ok != ok2 || r != r2 {
			t.Fatal("not deterministic")
		}
	})
}

func FuzzReceiptID(f *testing.F) {
	f.Add("0001715004", uint8(1))
	f.Add("1A2B3C", uint8(2))
	f.Add(" 00aB ", uint8(0))
	f.Fuzz(func(t *testing.T, id string, form uint8) {
		got := ReceiptID(id, MessageIDForm(form%3))
		if NormalizeID(got) != got {
			t.Fatalf("ReceiptID(%q) = %q is not normal", id, got)
		}
	})
}

// Format writes what ParseReceiptText reads back, dates to the minute, the text cut to 20.
func TestFormatReceiptText(t *testing.T) {
	sub := time.Date(2026, 11, 26, 6, 1, 0, 0, time.UTC)
	r := ReceiptText{ID: "0a6e1c2d-3b4f-4a5b-8c9d-0e1f2a3b4c5d", Sub: "001", Dlvrd: "001", Submitted: sub,
		Done: sub.Add(3 * time.Minute), State: StateDelivered, Err: "000", Text: "Your code is 1234, valid for 5 minutes"}
	s := r.Format()
	want := "id:0a6e1c2d-3b4f-4a5b-8c9d-0e1f2a3b4c5d sub:001 dlvrd:001 submit date:2611260601 done date:2611260604 stat:DELIVRD err:000 text:Your code is 1234, v"
	if s != want {
		t.Fatalf("Format() = %q; want %q", s, want)
	}
	got, ok := ParseReceiptText([]byte(s))
	if !ok || got.ID != r.ID || got.Stat != "DELIVRD" || got.State != StateDelivered || !got.Submitted.Equal(r.Submitted) ||
		!got.Done.Equal(r.Done) || got.Err != "000" || got.Text != "Your code is 1234, v" {
		t.Errorf("ParseReceiptText(Format()) = %+v, %v", got, ok)
	}
}
