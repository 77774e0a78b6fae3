package carriers

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	ok := func(e164 string, n Network) Number { return Number{E164: e164, Network: n} }
	tests := []struct {
		raw     string
		want    Number
		wantErr error
	}{
		// Accepted forms.
		{"0712345678", ok("+254712345678", Safaricom), nil},
		{"254712345678", ok("+254712345678", Safaricom), nil},
		{"+254712345678", ok("+254712345678", Safaricom), nil},
		{"0110123456", ok("+254110123456", Safaricom), nil},
		{"254110123456", ok("+254110123456", Safaricom), nil},
		{"+254110123456", ok("+254110123456", Safaricom), nil},
		{"0712 345 678", ok("+254712345678", Safaricom), nil},
		{"0712-345-678", ok("+254712345678", Safaricom), nil},
		{"0712.345.678", ok("+254712345678", Safaricom), nil},
		{"(0712) 345678", ok("+254712345678", Safaricom), nil},
		{"+254 (712) 345-678", ok("+254712345678", Safaricom), nil},
		{"(+254) 712 345 678", ok("+254712345678", Safaricom), nil},
		{"  +254712345678  ", ok("+254712345678", Safaricom), nil},

		// telecom.md §1.1, as nyaruka/phonenumbers v1.8.1 sees it.
		{"0700000000", ok("+254700000000", Safaricom), nil},
		{"0729999999", ok("+254729999999", Safaricom), nil},
		{"0730000000", ok("+254730000000", Airtel), nil},
		{"0739999999", ok("+254739999999", Airtel), nil},
		{"0740123456", ok("+254740123456", Safaricom), nil},
		{"0743123456", ok("+254743123456", Safaricom), nil},
		{"0744123456", Number{E164: "+254744123456"}, ErrUnsupportedNetwork}, // Homeland Media
		{"0745123456", ok("+254745123456", Safaricom), nil},
		{"0746123456", ok("+254746123456", Safaricom), nil},
		{"0747123456", Number{E164: "+254747123456"}, ErrUnsupportedNetwork}, // JTL (Faiba)
		{"0748123456", ok("+254748123456", Safaricom), nil},
		{"0749123456", ok("+254749123456", Safaricom), nil},
		{"0750123456", ok("+254750123456", Airtel), nil},
		{"0756123456", ok("+254756123456", Airtel), nil},
		{"0757123456", ok("+254757123456", Safaricom), nil},
		{"0759123456", ok("+254759123456", Safaricom), nil},
		{"0760123456", Number{E164: "+254760123456"}, ErrUnsupportedNetwork}, // Mobile Pay
		{"0761123456", ok("+254761123456", Airtel), nil},
		{"0762123456", ok("+254762123456", Airtel), nil},
		{"0763123456", Number{E164: "+254763123456"}, ErrUnsupportedNetwork}, // Finserve (Equitel)
		{"0766123456", Number{E164: "+254766123456"}, ErrUnsupportedNetwork}, // Finserve (Equitel)
		{"0767123456", Number{E164: "+254767123456"}, ErrUnsupportedNetwork}, // Sema Mobile
		{"0768123456", ok("+254768123456", Safaricom), nil},
		{"0769123456", ok("+254769123456", Safaricom), nil},
		{"0770123456", ok("+254770123456", Telkom), nil},
		{"0779999999", ok("+254779999999", Telkom), nil},
		{"0780123456", ok("+254780123456", Airtel), nil},
		{"0789999999", ok("+254789999999", Airtel), nil},
		{"0790123456", ok("+254790123456", Safaricom), nil},
		{"0799999999", ok("+254799999999", Safaricom), nil},
		{"0100123456", ok("+254100123456", Airtel), nil},
		{"0108123456", ok("+254108123456", Airtel), nil},
		{"0111123456", ok("+254111123456", Safaricom), nil},
		{"0118123456", ok("+254118123456", Safaricom), nil},
		{"0119123456", ok("+254119123456", Safaricom), nil},
		{"0120123456", ok("+254120123456", Telkom), nil},
		{"0121123456", Number{E164: "+254121123456"}, ErrUnsupportedNetwork}, // Infura
		{"0124123456", Number{E164: "+254124123456"}, ErrUnsupportedNetwork}, // Finserve (Equitel)
		{"0130123456", Number{E164: "+254130123456"}, ErrUnsupportedNetwork}, // NRG Media
		{"0140123456", ok("+254140123456", Safaricom), nil},
		{"0143123456", ok("+254143123456", Safaricom), nil},
		// Allocated upstream after the library's release (0144-0145 in
		// libphonenumber 9.0.33, 018x in 9.0.35): newer_ke.tsv has them.
		{"0144123456", ok("+254144123456", Safaricom), nil},
		{"0145123456", ok("+254145123456", Safaricom), nil},
		{"0180123456", ok("+254180123456", Safaricom), nil},
		{"0189999999", ok("+254189999999", Safaricom), nil},

		// telecom.md §1.3: ranges outside the validity pattern.
		{"0109123456", Number{}, ErrInvalidNumber},
		{"0122123456", Number{}, ErrInvalidNumber},
		{"0123123456", Number{}, ErrInvalidNumber},
		{"0125123456", Number{}, ErrInvalidNumber},
		{"0129123456", Number{}, ErrInvalidNumber},
		{"0131123456", Number{}, ErrInvalidNumber},
		{"0139123456", Number{}, ErrInvalidNumber},
		{"0146123456", Number{}, ErrInvalidNumber},
		{"0149123456", Number{}, ErrInvalidNumber},
		{"0150123456", Number{}, ErrInvalidNumber},
		{"0160123456", Number{}, ErrInvalidNumber},
		{"0170123456", Number{}, ErrInvalidNumber},
		{"0190123456", Number{}, ErrInvalidNumber},
		{"254109123456", Number{}, ErrInvalidNumber},
		// Fixed lines, toll-free, premium, short codes.
		{"0202123456", Number{}, ErrInvalidNumber},
		{"0411234567", Number{}, ErrInvalidNumber},
		{"0800123456", Number{}, ErrInvalidNumber},
		{"0900123456", Number{}, ErrInvalidNumber},
		{"+254202123456", Number{}, ErrInvalidNumber},
		{"22141", Number{}, ErrInvalidNumber},
		// Forms we do not accept.
		{"712345678", Number{}, ErrInvalidNumber},
		{"110123456", Number{}, ErrInvalidNumber},
		{"00254712345678", Number{}, ErrInvalidNumber},
		{"000254712345678", Number{}, ErrInvalidNumber},
		{"+2540712345678", Number{}, ErrInvalidNumber},
		{"2540712345678", Number{}, ErrInvalidNumber},
		{"+254 (0) 712 345 678", Number{}, ErrInvalidNumber},
		{"+0712345678", Number{}, ErrInvalidNumber},
		{"++254712345678", Number{}, ErrInvalidNumber},
		{"254+712345678", Number{}, ErrInvalidNumber},
		{"0712345678+", Number{}, ErrInvalidNumber},
		{"+255712345678", Number{}, ErrInvalidNumber}, // Tanzania
		{"256712345678", Number{}, ErrInvalidNumber},  // Uganda
		{"07123456789", Number{}, ErrInvalidNumber},
		{"071234567", Number{}, ErrInvalidNumber},
		{"2547123456789", Number{}, ErrInvalidNumber},
		{"07123456780000000000000", Number{}, ErrInvalidNumber},
		{"1712345678", Number{}, ErrInvalidNumber},
		{"0012345678", Number{}, ErrInvalidNumber},
		{"0612345678", Number{}, ErrInvalidNumber},
		{"0812345678", Number{}, ErrInvalidNumber},
		{"0912345678", Number{}, ErrInvalidNumber},
		{"254012345678", Number{}, ErrInvalidNumber},
		{"254812345678", Number{}, ErrInvalidNumber},
		// Characters that are not separators.
		{"0712345678\n", Number{}, ErrInvalidNumber},
		{"0712\t345678", Number{}, ErrInvalidNumber},
		{"0712/345/678", Number{}, ErrInvalidNumber},
		{"O712345678", Number{}, ErrInvalidNumber},
		{"0712345678 ext 1", Number{}, ErrInvalidNumber},
		{"tel:+254712345678", Number{}, ErrInvalidNumber},
		{"\uff10\uff17\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18", Number{}, ErrInvalidNumber}, // full-width digits
		{"0712\u00a0345678", Number{}, ErrInvalidNumber},                                             // no-break space
		{"", Number{}, ErrInvalidNumber},
		{"   ", Number{}, ErrInvalidNumber},
		{"+", Number{}, ErrInvalidNumber},
		{"\xff0712345678", Number{}, ErrInvalidNumber},
	}
	p := DefaultPlan()
	for _, tt := range tests {
		got, err := p.Normalize(tt.raw)
		if got != tt.want || err != tt.wantErr {
			t.Errorf("Normalize(%q) = %+v, %v; want %+v, %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParsePlan(t *testing.T) {
	const file = `# a test plan
7	safaricom

74  other
747 airtel
7470 telkom
110	safaricom
`
	p, err := ParsePlan(strings.NewReader(file))
	if err != nil {
		t.Fatalf("ParsePlan: %v", err)
	}
	tests := []struct {
		raw     string
		want    Network
		wantErr error
	}{
		{"0712345678", Safaricom, nil},
		{"0741234567", NetworkUnknown, ErrUnsupportedNetwork},
		{"0747123456", Airtel, nil},
		{"0747012345", Telkom, nil},
		{"0110123456", Safaricom, nil},
		{"0111123456", NetworkUnknown, ErrInvalidNumber},
		{"0100123456", NetworkUnknown, ErrInvalidNumber},
	}
	for _, tt := range tests {
		got, err := p.Normalize(tt.raw)
		if got.Network != tt.want || err != tt.wantErr {
			t.Errorf("Normalize(%q) = %+v, %v; want network %v, %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParsePlanErrors(t *testing.T) {
	tests := []struct {
		name, file, wantErr string
	}{
		{"empty", "", "no ranges"},
		{"comments only", "# nothing\n\n", "no ranges"},
		{"one field", "7\n", "line 1: want 2 fields"},
		{"three fields", "7 safaricom x\n", "line 1: want 2 fields"},
		{"unknown network", "# x\n7 orange\n", "line 2: unknown network"},
		{"capitalised network", "7 Safaricom\n", "unknown network"},
		{"unknown as network", "7 unknown\n", "unknown network"},
		{"national prefix", "0110 safaricom\n", `prefix "0110"`},
		{"fixed-line prefix", "20 airtel\n", `prefix "20"`},
		{"letters", "7a safaricom\n", `prefix "7a"`},
		{"too long", "7123456789 safaricom\n", `prefix "7123456789"`},
		{"plus", "+2547 safaricom\n", `prefix "+2547"`},
		{"duplicate", "7 safaricom\n71 airtel\n7 airtel\n", "prefix 7 twice"},
	}
	for _, tt := range tests {
		p, err := ParsePlan(strings.NewReader(tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: ParsePlan(%q) = %v, %v; want error containing %q", tt.name, tt.file, p, err, tt.wantErr)
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParsePlanReadError(t *testing.T) {
	if _, err := ParsePlan(failingReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("ParsePlan(failing reader) error = %v; want the read error", err)
	}
}

func TestZeroPlanRejects(t *testing.T) {
	var p Plan
	if got, err := p.Normalize("0712345678"); err != ErrInvalidNumber {
		t.Errorf("Plan{}.Normalize(%q) = %+v, %v; want %v", "0712345678", got, err, ErrInvalidNumber)
	}
}

// TestEmbeddedPlan checks the shape of the generated file: sorted,
// documented, and only the networks the format allows.
func TestEmbeddedPlan(t *testing.T) {
	if !strings.HasPrefix(planKE, "# Code generated by go run ./internal/genplan; DO NOT EDIT.\n") {
		t.Errorf("plan_ke.tsv does not start with the generated-code header")
	}
	rows := DefaultPlan().rows
	if len(rows) < 20 {
		t.Fatalf("DefaultPlan has %d rows; want the full Kenyan plan", len(rows))
	}
	line := regexp.MustCompile(`^[17][0-9]{0,8}\t(safaricom|airtel|telkom|other)$`)
	var data []string
	for l := range strings.Lines(planKE) {
		if !strings.HasPrefix(l, "#") {
			data = append(data, strings.TrimSuffix(l, "\n"))
		}
	}
	if len(data) != len(rows) {
		t.Errorf("plan_ke.tsv has %d data lines; DefaultPlan has %d rows", len(data), len(rows))
	}
	for i, l := range data {
		if !line.MatchString(l) {
			t.Errorf("plan_ke.tsv line %q does not match %v", l, line)
		}
		if i > 0 && data[i-1] >= l {
			t.Errorf("plan_ke.tsv is not sorted: %q before %q", data[i-1], l)
		}
	}
	if p1, p2 := DefaultPlan(), DefaultPlan(); p1 != p2 {
		t.Errorf("DefaultPlan() returned different plans; want one shared plan")
	}
}

func TestNormalizeAllocs(t *testing.T) {
	p := DefaultPlan()
	tests := []struct {
		raw  string
		want float64
	}{
		{"+254 712 345 678", 1},
		{"0110123456", 1},
		{"0747123456", 1}, // unsupported networks still get their E.164 form
		{"0109123456", 0},
		{"hello", 0},
	}
	for _, tt := range tests {
		got := testing.AllocsPerRun(100, func() { _, _ = p.Normalize(tt.raw) })
		if got != tt.want {
			t.Errorf("Normalize(%q) allocates %v times; want %v", tt.raw, got, tt.want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"0712345678", "254712345678", "+254712345678", "0110123456",
		"+254 (0) 712 345 678", "(+254) 712-345.678", "0747123456",
		"0109123456", "00254712345678", "+2540712345678", "712345678",
		"", "+", "++", "0", "\xff", "\uff10\uff17\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18",
	} {
		f.Add(s)
	}
	p := DefaultPlan()
	e164 := regexp.MustCompile(`^\+254[0-9]{9}$`)
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := p.Normalize(raw)
		if err != nil {
			if err != ErrInvalidNumber && err != ErrUnsupportedNetwork {
				t.Fatalf("Normalize(%q) error = %v; want one of the sentinel errors", raw, err)
			}
			if err == ErrInvalidNumber && got != (Number{}) {
				t.Fatalf("Normalize(%q) = %+v with error %v; want the zero Number", raw, got, err)
			}
			if err == ErrUnsupportedNetwork && (!e164.MatchString(got.E164) || got.Network != NetworkUnknown) {
				t.Fatalf("Normalize(%q) = %+v with error %v; want an E.164 number and no network", raw, got, err)
			}
			return
		}
		if !e164.MatchString(got.E164) {
			t.Fatalf("Normalize(%q).E164 = %q; want +254 and 9 digits", raw, got.E164)
		}
		if got.Network != Safaricom && got.Network != Airtel && got.Network != Telkom {
			t.Fatalf("Normalize(%q).Network = %v; want one of %v", raw, got.Network, Networks())
		}
		for _, form := range []string{got.E164, got.E164[1:], "0" + got.E164[4:]} {
			again, err := p.Normalize(form)
			if again != got || err != nil {
				t.Fatalf("Normalize(%q) = %+v, %v; want %+v as for Normalize(%q)", form, again, err, got, raw)
			}
		}
	})
}

// benchNumbers returns n numbers in the accepted forms, all valid.
func benchNumbers(n int) []string {
	prefixes := []string{"71", "72", "11", "73", "78", "70", "77", "79"}
	nums := make([]string, n)
	for i := range nums {
		nsn := fmt.Sprintf("%s%07d", prefixes[i%len(prefixes)], (i*7919)%10_000_000)
		switch i % 3 {
		case 0:
			nums[i] = "0" + nsn
		case 1:
			nums[i] = "254" + nsn
		default:
			nums[i] = "+254 " + nsn[:3] + " " + nsn[3:6] + " " + nsn[6:]
		}
	}
	return nums
}

func BenchmarkNormalize(b *testing.B) {
	p := DefaultPlan()
	nums := benchNumbers(8)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := p.Normalize(nums[i%len(nums)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkNormalize10k(b *testing.B) {
	p := DefaultPlan()
	nums := benchNumbers(10_000)
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range nums {
			if _, err := p.Normalize(n); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(nums)), "ns/number")
}

func TestParseAgreesWithNormalize(t *testing.T) {
	p := DefaultPlan()
	for _, raw := range []string{"0712345678", "+254 733 123 456", "254770123456", "0747123456", "0109123456", "x", "", "0110123456"} {
		n, nerr := p.Normalize(raw)
		nsn, net, perr := p.Parse([]byte(raw))
		if nerr != perr || net != n.Network || (n.E164 != "" && fmt.Sprintf("+254%09d", nsn) != n.E164) {
			t.Errorf("Parse(%q) = %d, %v, %v; Normalize = %+v, %v", raw, nsn, net, perr, n, nerr)
		}
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _ = p.Parse([]byte("0712345678")) }); a != 0 {
		t.Errorf("Parse allocates %v times; want 0", a)
	}
}
