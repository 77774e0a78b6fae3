package carriers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// The tests in this file hold plan_ke.tsv to the library it was generated
// from, with newer_ke.tsv's ranges over it. They fail after a library upgrade
// until go generate is rerun.

// newerPlan is newer_ke.tsv: the ranges genplan takes over the library's word.
var newerPlan = sync.OnceValues(func() (*Plan, error) {
	f, err := os.Open("newer_ke.tsv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePlan(f)
})

// libraryVal classifies a 9-digit NSN the way internal/genplan does: newer_ke.tsv's ranges,
// else the library.
func libraryVal(t *testing.T, nsn string) planVal {
	t.Helper()
	newer, err := newerPlan()
	if err != nil {
		t.Fatalf("newer_ke.tsv: %v", err)
	}
	var digits [nsnLen]byte
	copy(digits[:], nsn)
	if v := newer.lookup(&digits); v != valNone {
		return v
	}
	num, err := phonenumbers.Parse("+254"+nsn, "")
	if err != nil {
		t.Fatalf("phonenumbers.Parse(%q): %v", "+254"+nsn, err)
	}
	if !phonenumbers.IsValidNumber(num) || phonenumbers.GetNumberType(num) != phonenumbers.MOBILE {
		return valNone
	}
	name, err := phonenumbers.GetCarrierForNumber(num, "en")
	if err != nil {
		t.Fatalf("phonenumbers.GetCarrierForNumber(%q): %v", nsn, err)
	}
	switch name {
	case "Safaricom":
		return planVal(Safaricom)
	case "Airtel":
		return planVal(Airtel)
	case "Telkom":
		return planVal(Telkom)
	default:
		return valOther
	}
}

func valString(v planVal) string {
	switch v {
	case valNone:
		return "invalid"
	case valOther:
		return "other"
	default:
		return Network(v).String()
	}
}

// normalizeVal classifies an NSN through the public API.
func normalizeVal(t *testing.T, p *Plan, nsn string) planVal {
	t.Helper()
	n, err := p.Normalize("+254" + nsn)
	switch err {
	case nil:
		if n.E164 != "+254"+nsn {
			t.Fatalf("Normalize(%q).E164 = %q", "+254"+nsn, n.E164)
		}
		return planVal(n.Network)
	case ErrUnsupportedNetwork:
		return valOther
	case ErrInvalidNumber:
		return valNone
	default:
		t.Fatalf("Normalize(%q) error = %v", "+254"+nsn, err)
		return valNone
	}
}

// samplesUnder returns the first, middle and last NSNs under prefix and a
// few pseudo-random ones.
func samplesUnder(prefix string, rng *rand.Rand) []string {
	rest := nsnLen - len(prefix)
	if rest == 0 {
		return []string{prefix}
	}
	out := []string{
		prefix + strings.Repeat("0", rest),
		prefix + "5" + strings.Repeat("0", rest-1),
		prefix + strings.Repeat("9", rest),
	}
	for range 3 {
		out = append(out, fmt.Sprintf("%s%0*d", prefix, rest, rng.IntN(pow10(rest))))
	}
	return out
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}

// TestPlanMatchesLibrary checks every row of the embedded plan: numbers
// under it are valid mobile numbers on the row's network for the library.
func TestPlanMatchesLibrary(t *testing.T) {
	p := DefaultPlan()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, row := range p.rows {
		for _, nsn := range samplesUnder(row.prefix, rng) {
			if got, want := libraryVal(t, nsn), row.val; got != want {
				t.Errorf("+254%s: library says %s; plan row %s says %s", nsn, valString(got), row.prefix, valString(want))
			}
			if got, want := normalizeVal(t, p, nsn), row.val; got != want {
				t.Errorf("Normalize(%q) gives %s; plan row %s says %s", "+254"+nsn, valString(got), row.prefix, valString(want))
			}
		}
	}
}

// TestLibraryMatchesPlan walks the other way: under every 4-digit NSN
// prefix starting with 1 or 7, whatever the library says (including
// "invalid" for ranges the plan leaves out) is what Normalize says.
func TestLibraryMatchesPlan(t *testing.T) {
	p := DefaultPlan()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, first := range []int{1, 7} {
		for i := range 1000 {
			prefix := fmt.Sprintf("%d%03d", first, i)
			for _, nsn := range samplesUnder(prefix, rng) {
				if got, want := normalizeVal(t, p, nsn), libraryVal(t, nsn); got != want {
					t.Errorf("Normalize(%q) gives %s; library says %s", "+254"+nsn, valString(got), valString(want))
				}
			}
		}
	}
}

// TestNoMobileOutsideOneAndSeven backs Normalize's early rejection of NSNs
// that start with another digit: the library has no Kenyan mobile numbers
// there either.
func TestNoMobileOutsideOneAndSeven(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, first := range "02345689" {
		for i := range 100 {
			for _, nsn := range samplesUnder(fmt.Sprintf("%c%02d", first, i), rng) {
				if got := libraryVal(t, nsn); got != valNone {
					t.Errorf("+254%s: library says %s; want invalid", nsn, valString(got))
				}
			}
		}
	}
}
