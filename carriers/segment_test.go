package carriers

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// workedExamples are telecom.md §2.3 #1–#15, both variants where two are
// given, with the units and parts listed there.
var workedExamples = []struct {
	name string
	text string
	want Segmentation
}{
	{"#1 160 a", strings.Repeat("a", 160), Segmentation{GSM7, 160, 1}},
	{"#2 161 a", strings.Repeat("a", 161), Segmentation{GSM7, 161, 2}},
	{"#3 306 a", strings.Repeat("a", 306), Segmentation{GSM7, 306, 2}},
	{"#4 307 a", strings.Repeat("a", 307), Segmentation{GSM7, 307, 3}},
	{"#5 918 a", strings.Repeat("a", 918), Segmentation{GSM7, 918, 6}},
	{"#5 919 a", strings.Repeat("a", 919), Segmentation{GSM7, 919, 7}},
	{"#6 { + 158 digits", "{" + digits(158), Segmentation{GSM7, 160, 1}},
	{"#6 { + 159 digits", "{" + digits(159), Segmentation{GSM7, 161, 2}},
	{"#7 80 €", strings.Repeat("€", 80), Segmentation{GSM7, 160, 1}},
	{"#7 81 €", strings.Repeat("€", 81), Segmentation{GSM7, 162, 2}},
	{"#8 152 a € 152 a", strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152), Segmentation{GSM7, 306, 3}},
	{"#9 70 ж", strings.Repeat("ж", 70), Segmentation{UCS2, 70, 1}},
	{"#9 71 ж", strings.Repeat("ж", 71), Segmentation{UCS2, 71, 2}},
	{"#10 134 ж", strings.Repeat("ж", 134), Segmentation{UCS2, 134, 2}},
	{"#10 135 ж", strings.Repeat("ж", 135), Segmentation{UCS2, 135, 3}},
	{"#11 159 a + ’", strings.Repeat("a", 159) + "’", Segmentation{UCS2, 160, 3}},
	{"#12 Hello 😀", "Hello 😀", Segmentation{UCS2, 8, 1}},
	{"#13 68 a + 😀", strings.Repeat("a", 68) + "😀", Segmentation{UCS2, 70, 1}},
	{"#13 69 a + 😀", strings.Repeat("a", 69) + "😀", Segmentation{UCS2, 71, 2}},
	{"#14 66 a 😀 66 a", strings.Repeat("a", 66) + "😀" + strings.Repeat("a", 66), Segmentation{UCS2, 134, 3}},
	{"#15 147 a + promo suffix", strings.Repeat("a", 147) + " STOP*456*9*5#", Segmentation{GSM7, 161, 2}},
	{"#15 146 a + promo suffix", strings.Repeat("a", 146) + " STOP*456*9*5#", Segmentation{GSM7, 160, 1}},
}

// digits returns n decimal digits.
func digits(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteByte(byte('0' + i%10))
	}
	return b.String()
}

func TestSegmentWorkedExamples(t *testing.T) {
	for _, tt := range workedExamples {
		if got := Segment(tt.text); got != tt.want {
			t.Errorf("%s: Segment(%q) = %+v; want %+v", tt.name, tt.text, got, tt.want)
		}
		got, parts := Split(tt.text)
		if got != tt.want {
			t.Errorf("%s: Split(%q) = %+v; want %+v", tt.name, tt.text, got, tt.want)
		}
		checkParts(t, tt.text, got, parts)
	}
}

func TestSegment(t *testing.T) {
	tests := []struct {
		text string
		want Segmentation
	}{
		{"", Segmentation{GSM7, 0, 0}},
		{"a", Segmentation{GSM7, 1, 1}},
		{"Hello, world!", Segmentation{GSM7, 13, 1}},
		{"@$_", Segmentation{GSM7, 3, 1}},
		{"line 1\nline 2\r\n", Segmentation{GSM7, 15, 1}},
		{"£¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ¤¡ÄÖÑÜ§¿äöñüà", Segmentation{GSM7, 40, 1}},
		// Each extension character costs 2.
		{"\f^{}\\[~]|€", Segmentation{GSM7, 20, 1}},
		{"KES 1,000 [paid]", Segmentation{GSM7, 18, 1}},
		// Any character outside GSM 03.38 makes the whole text UCS-2.
		{"`", Segmentation{UCS2, 1, 1}},
		{"a\tb", Segmentation{UCS2, 3, 1}},
		{"ç", Segmentation{UCS2, 1, 1}}, // only capital Ç is GSM
		{"it’s", Segmentation{UCS2, 4, 1}},
		{"“quoted”", Segmentation{UCS2, 8, 1}},
		{"10–12", Segmentation{UCS2, 5, 1}},
		{"wait…", Segmentation{UCS2, 5, 1}},
		{"Habari 🇰🇪", Segmentation{UCS2, 11, 1}},
		{"\x00", Segmentation{UCS2, 1, 1}},
		{"\x1b", Segmentation{UCS2, 1, 1}},
		{"\u00a0", Segmentation{UCS2, 1, 1}},
		{"\u0391", Segmentation{UCS2, 1, 1}}, // Greek capital alpha, not A
		// In UCS-2 an extension character costs 1, like any other.
		{"€`", Segmentation{UCS2, 2, 1}},
		// Invalid UTF-8: each bad byte is one U+FFFD.
		{"\xff", Segmentation{UCS2, 1, 1}},
		{"ab\xe2\x82", Segmentation{UCS2, 4, 1}},
		{strings.Repeat("\xff", 71), Segmentation{UCS2, 71, 2}},
		// A literal U+FFFD is valid UTF-8 and costs 1 too.
		{"\ufffd", Segmentation{UCS2, 1, 1}},
		// Escape pairs at the part boundary: 152 + € does not fit 153.
		{strings.Repeat("a", 152) + "€", Segmentation{GSM7, 154, 1}},
		{strings.Repeat("a", 159) + "€", Segmentation{GSM7, 161, 2}},
		{strings.Repeat("€", 153), Segmentation{GSM7, 306, 3}}, // 76 + 76 + 1
		{strings.Repeat("😀", 35), Segmentation{UCS2, 70, 1}},
		{strings.Repeat("😀", 36), Segmentation{UCS2, 72, 2}},  // 33 + 3 emoji
		{strings.Repeat("😀", 67), Segmentation{UCS2, 134, 3}}, // 33 + 33 + 1
		{strings.Repeat("a", 153*255), Segmentation{GSM7, 153 * 255, 255}},
		{strings.Repeat("a", 153*255+1), Segmentation{GSM7, 153*255 + 1, 256}},
	}
	for _, tt := range tests {
		if got := Segment(tt.text); got != tt.want {
			t.Errorf("Segment(%q) = %+v; want %+v", tt.text, got, tt.want)
		}
		got, parts := Split(tt.text)
		if got != tt.want {
			t.Errorf("Split(%q) = %+v; want %+v", tt.text, got, tt.want)
		}
		checkParts(t, tt.text, got, parts)
	}
}

func TestSplitParts(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"one part", "Hello", []string{"Hello"}},
		{"161 a", a(161), []string{a(153), a(8)}},
		{"escape pair moves to the next part", a(152) + "€" + a(152), []string{a(152), "€" + a(151), a(1)}},
		{"escape pair that fits", a(151) + "€" + a(10), []string{a(151) + "€", a(10)}},
		{"surrogate pair moves to the next part", a(66) + "😀" + a(66), []string{a(66), "😀" + a(65), a(1)}},
		{"smart quote", a(159) + "’", []string{a(67), a(67), a(25) + "’"}},
	}
	for _, tt := range tests {
		s, got := Split(tt.text)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Split(%q) parts = %q; want %q", tt.name, tt.text, got, tt.want)
		}
		if s.Parts != len(tt.want) {
			t.Errorf("%s: Split(%q).Parts = %d; want %d", tt.name, tt.text, s.Parts, len(tt.want))
		}
	}
}

// checkParts asserts what must hold for any text: the parts rebuild it,
// match the Segmentation, respect the per-part limit on the wire, split no
// character, and are filled greedily.
func checkParts(t *testing.T, text string, s Segmentation, parts []string) {
	t.Helper()
	if got := strings.Join(parts, ""); got != text {
		t.Fatalf("Split(%q) parts join to %q; want the input", text, got)
	}
	if len(parts) != s.Parts {
		t.Fatalf("Split(%q) returned %d parts; its Segmentation says %d", text, len(parts), s.Parts)
	}
	if seg := Segment(text); seg != s {
		t.Fatalf("Segment(%q) = %+v; Split says %+v", text, seg, s)
	}
	if text == "" {
		if s.Parts != 0 || s.Units != 0 || s.Encoding != GSM7 {
			t.Fatalf("Segment(%q) = %+v; want GSM7, 0 units, 0 parts", text, s)
		}
		return
	}
	single, multi := gsm7Single, gsm7Multi
	if s.Encoding == UCS2 {
		single, multi = ucs2Single, ucs2Multi
	}
	limit := multi
	if len(parts) == 1 {
		limit = single
	}
	total := 0
	for i, part := range parts {
		if part == "" {
			t.Fatalf("Split(%q) part %d is empty", text, i)
		}
		if utf8.ValidString(text) && !utf8.ValidString(part) {
			t.Fatalf("Split(%q) part %d = %q splits a character", text, i, part)
		}
		units := wireUnits(t, part, s.Encoding)
		total += units
		if units > limit {
			t.Fatalf("Split(%q) part %d has %d %v units; limit %d", text, i, units, s.Encoding, limit)
		}
		// Greedy: the next part's first character would not have fit.
		if i+1 < len(parts) {
			r, size := utf8.DecodeRuneInString(parts[i+1])
			next := parts[i+1][:size]
			if units+wireUnits(t, next, s.Encoding) <= limit {
				t.Fatalf("Split(%q) part %d (%d units) ends before %q, which fits", text, i, units, r)
			}
		}
	}
	if total != s.Units {
		t.Fatalf("Split(%q) parts have %d units in all; Segmentation says %d", text, total, s.Units)
	}
}

// wireUnits encodes part as it would be sent and returns its length in
// septets or UTF-16 code units. An escape pair or a surrogate pair cut in
// half would show up as a decoding error or a stray surrogate.
func wireUnits(t *testing.T, part string, enc Encoding) int {
	t.Helper()
	if enc == GSM7 {
		b, err := EncodeGSM7(part)
		if err != nil {
			t.Fatalf("EncodeGSM7(%q) of a GSM7 part: %v", part, err)
		}
		if b[len(b)-1] == gsmEscape {
			t.Fatalf("part %q ends with an escape", part)
		}
		return len(b)
	}
	b := EncodeUCS2(part)
	if last := uint16(b[len(b)-2])<<8 | uint16(b[len(b)-1]); utf16.IsSurrogate(rune(last)) && last < 0xdc00 {
		t.Fatalf("part %q ends with a high surrogate", part)
	}
	if first := uint16(b[0])<<8 | uint16(b[1]); first >= 0xdc00 && first <= 0xdfff {
		t.Fatalf("part %q starts with a low surrogate", part)
	}
	return len(b) / 2
}

func TestEncodingString(t *testing.T) {
	tests := []struct {
		e    Encoding
		want string
	}{
		{GSM7, "gsm7"},
		{UCS2, "ucs2"},
		{0, "unknown"},
		{9, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("Encoding(%d).String() = %q; want %q", tt.e, got, tt.want)
		}
	}
}

func TestGSMAlphabet(t *testing.T) {
	if n := utf8.RuneCountInString(gsmBasic); n != 128 {
		t.Fatalf("gsmBasic has %d characters; want 128", n)
	}
	if n, m := utf8.RuneCountInString(gsmExtChars), len(gsmExtCodes); n != m || n != 10 {
		t.Fatalf("extension table has %d characters and %d codes; want 10 each", n, m)
	}
	// Code points that are easy to get wrong (GSM0338.TXT, TS 23.038).
	wantCodes := map[rune]byte{
		'@': 0x00, '£': 0x01, '$': 0x02, 'Ç': 0x09, '\n': 0x0a, '\r': 0x0d,
		'\u0394': 0x10, '_': 0x11, '\u03a6': 0x12, '\u0393': 0x13, '\u039b': 0x14,
		'\u03a9': 0x15, '\u03a0': 0x16, '\u03a8': 0x17, '\u03a3': 0x18,
		'\u0398': 0x19, '\u039e': 0x1a, 'É': 0x1f, '¤': 0x24, '¡': 0x40,
		'Ä': 0x5b, '§': 0x5f, '¿': 0x60, 'à': 0x7f,
	}
	for r, code := range wantCodes {
		b, err := EncodeGSM7(string(r))
		if err != nil || !bytes.Equal(b, []byte{code}) {
			t.Errorf("EncodeGSM7(%q) = % x, %v; want %02x", r, b, err, code)
		}
	}
	// Printable ASCII is all GSM except the backtick; the nine ASCII
	// extension characters cost 2.
	for r := rune(' '); r <= '~'; r++ {
		want := 1
		switch {
		case r == '`':
			want = 0
		case strings.ContainsRune("^{}\\[~]|", r):
			want = 2
		}
		got := Segment(string(r))
		if want == 0 && got.Encoding != UCS2 || want > 0 && got != (Segmentation{GSM7, want, 1}) {
			t.Errorf("Segment(%q) = %+v; want %d septets", r, got, want)
		}
	}
	// No other control character is in the alphabet.
	for r := rune(0); r < ' '; r++ {
		got := Segment(string(r))
		gsm := r == '\n' || r == '\r' || r == '\f'
		if (got.Encoding == GSM7) != gsm {
			t.Errorf("Segment(%q) = %+v; want GSM7 %v", r, got, gsm)
		}
	}
}

func TestEncodeGSM7(t *testing.T) {
	tests := []struct {
		s    string
		want []byte
	}{
		{"", []byte{}},
		{"Hi", []byte{0x48, 0x69}},
		{"@£$¥", []byte{0x00, 0x01, 0x02, 0x03}},
		{"a_b", []byte{0x61, 0x11, 0x62}},
		{"\f^{}\\[~]|€", []byte{
			0x1b, 0x0a, 0x1b, 0x14, 0x1b, 0x28, 0x1b, 0x29, 0x1b, 0x2f,
			0x1b, 0x3c, 0x1b, 0x3d, 0x1b, 0x3e, 0x1b, 0x40, 0x1b, 0x65,
		}},
		{"KES 5€", []byte{0x4b, 0x45, 0x53, 0x20, 0x35, 0x1b, 0x65}},
		{"Çà\n", []byte{0x09, 0x7f, 0x0a}},
	}
	for _, tt := range tests {
		got, err := EncodeGSM7(tt.s)
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("EncodeGSM7(%q) = % x, %v; want % x", tt.s, got, err, tt.want)
		}
		back, err := DecodeGSM7(got)
		if err != nil || back != tt.s {
			t.Errorf("DecodeGSM7(% x) = %q, %v; want %q", got, back, err, tt.s)
		}
	}
	for _, s := range []string{"`", "ç", "it’s", "a\tb", "😀", "\x1b", "\xff", "ok\xe2\x82", "\ufffd"} {
		if got, err := EncodeGSM7(s); err == nil {
			t.Errorf("EncodeGSM7(%q) = % x, nil; want an error", s, got)
		}
	}
}

func TestGSM7RoundTripAlphabet(t *testing.T) {
	var all strings.Builder
	for i, r := range []rune(gsmBasic) {
		if i != gsmEscape {
			all.WriteRune(r)
		}
	}
	all.WriteString(gsmExtChars)
	s := all.String()
	b, err := EncodeGSM7(s)
	if err != nil {
		t.Fatalf("EncodeGSM7(alphabet): %v", err)
	}
	if want := 127 + 2*10; len(b) != want || Segment(s).Units != want {
		t.Errorf("EncodeGSM7(alphabet) has %d septets, Segment says %d; want %d", len(b), Segment(s).Units, want)
	}
	back, err := DecodeGSM7(b)
	if err != nil || back != s {
		t.Errorf("DecodeGSM7(EncodeGSM7(%q)) = %q, %v", s, back, err)
	}
}

func TestDecodeGSM7(t *testing.T) {
	tests := []struct {
		b       []byte
		want    string
		wantErr bool
	}{
		{nil, "", false},
		{[]byte{0x00, 0x10, 0x7f}, "@Δà", false},
		{[]byte{0x1b, 0x65}, "€", false},
		{[]byte{0x1b, 0x41}, "A", false},  // unknown escape: basic character
		{[]byte{0x1b, 0x1b}, " ", false},  // reserved double escape: space
		{[]byte{0x1b, 0x0d}, "\r", false}, // page break without support: CR
		{[]byte{0x80}, "", true},
		{[]byte{0x41, 0xff}, "", true},
		{[]byte{0x1b}, "", true},
		{[]byte{0x41, 0x1b}, "", true},
		{[]byte{0x1b, 0x80}, "", true},
	}
	for _, tt := range tests {
		got, err := DecodeGSM7(tt.b)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("DecodeGSM7(% x) = %q, %v; want %q, error %v", tt.b, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestEncodeUCS2(t *testing.T) {
	tests := []struct {
		s    string
		want []byte
	}{
		{"", []byte{}},
		{"A", []byte{0x00, 0x41}},
		{"ж’", []byte{0x04, 0x36, 0x20, 0x19}},
		{"😀", []byte{0xd8, 0x3d, 0xde, 0x00}},
		{"\xff", []byte{0xff, 0xfd}},
		{"a\xe2\x82b", []byte{0x00, 0x61, 0xff, 0xfd, 0xff, 0xfd, 0x00, 0x62}},
	}
	for _, tt := range tests {
		if got := EncodeUCS2(tt.s); !bytes.Equal(got, tt.want) {
			t.Errorf("EncodeUCS2(%q) = % x; want % x", tt.s, got, tt.want)
		}
	}
	for _, s := range []string{"Habari yako? 😀🇰🇪 – “sawa”…", "ж", strings.Repeat("€😀", 40)} {
		b := EncodeUCS2(s)
		if got := decodeUTF16BE(b); got != s {
			t.Errorf("decode(EncodeUCS2(%q)) = %q", s, got)
		}
		if len(b) != 2*Segment(s).Units && Segment(s).Encoding == UCS2 {
			t.Errorf("EncodeUCS2(%q) has %d octets; Segment says %d units", s, len(b), Segment(s).Units)
		}
	}
}

func decodeUTF16BE(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return string(utf16.Decode(u))
}

func TestSegmentAllocs(t *testing.T) {
	for _, text := range []string{strings.Repeat("a", 918), strings.Repeat("ж€😀", 100), "\xff"} {
		if n := testing.AllocsPerRun(100, func() { Segment(text) }); n != 0 {
			t.Errorf("Segment(%.20q...) allocates %v times; want 0", text, n)
		}
	}
}

func FuzzSegment(f *testing.F) {
	for _, ex := range workedExamples {
		f.Add(ex.text)
	}
	for _, s := range []string{"", "\xff", "a\xe2\x82", "€`", strings.Repeat("€", 153), strings.Repeat("😀", 36)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, parts := Split(text)
		checkParts(t, text, s, parts)
		want := ucs2Units(text)
		if s.Encoding == GSM7 {
			b, err := EncodeGSM7(text)
			if err != nil {
				t.Fatalf("Segment(%q) is GSM7 but EncodeGSM7 fails: %v", text, err)
			}
			want = len(b)
			if back, err := DecodeGSM7(b); err != nil || back != text {
				t.Fatalf("DecodeGSM7(EncodeGSM7(%q)) = %q, %v", text, back, err)
			}
		} else if _, err := EncodeGSM7(text); err == nil {
			t.Fatalf("Segment(%q) is UCS2 but EncodeGSM7 succeeds", text)
		}
		if s.Units != want {
			t.Fatalf("Segment(%q).Units = %d; the encoded text has %d", text, s.Units, want)
		}
	})
}

func FuzzDecodeGSM7(f *testing.F) {
	f.Add([]byte{0x1b, 0x65, 0x41})
	f.Add([]byte{0x1b, 0x1b})
	f.Add([]byte{0x1b})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeGSM7(b)
		if err != nil {
			return
		}
		again, err := EncodeGSM7(s)
		if err != nil {
			t.Fatalf("EncodeGSM7(DecodeGSM7(% x) = %q): %v", b, s, err)
		}
		if back, err := DecodeGSM7(again); err != nil || back != s {
			t.Fatalf("DecodeGSM7(% x) = %q, %v; want %q", again, back, err, s)
		}
		if len(again) > len(b) {
			t.Fatalf("EncodeGSM7(%q) = % x, longer than its source % x", s, again, b)
		}
	})
}

func BenchmarkSegment(b *testing.B) {
	texts := []struct{ name, text string }{
		{"ascii160", strings.Repeat("Your OTP is 123456. ", 8)},
		{"ascii918", strings.Repeat("Habari! Karibu Tuma SMS. ", 37)[:918]},
		{"ucs2", strings.Repeat("Habari 😀 “sawa” ", 12)},
	}
	for _, tt := range texts {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Segment(tt.text)
			}
		})
	}
}

func BenchmarkSplit(b *testing.B) {
	text := strings.Repeat("Habari! Karibu Tuma SMS. ", 37)[:918]
	b.ReportAllocs()
	for b.Loop() {
		Split(text)
	}
}
