package carriers

import (
	"bufio"
	_ "embed" // for the numbering plan data
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

//go:generate go run ./internal/genplan -o plan_ke.tsv

// planKE is the Kenyan numbering plan generated from the libphonenumber
// metadata by internal/genplan, with newer_ke.tsv's ranges (allocated after the
// library's release) over it. It is data, not code, because the range list
// keeps growing: add a newer range there, or update the library, and run go
// generate; or load an operator's file with ParsePlan.
//
//go:embed plan_ke.tsv
var planKE string

// Normalize errors. Both are returned as is (unwrapped), so that rejecting
// numbers in bulk costs no allocations; callers already hold the input.
var (
	// ErrInvalidNumber means the input is not a Kenyan mobile number in one
	// of the accepted forms, or its range is not allocated to mobile.
	ErrInvalidNumber = errors.New("not a valid Kenyan mobile number")
	// ErrUnsupportedNetwork means the number is a valid Kenyan mobile
	// number on a network other than Safaricom, Airtel or Telkom (Equitel,
	// Faiba/JTL, ...), which Tuma cannot deliver to.
	ErrUnsupportedNetwork = errors.New("number is on a Kenyan mobile network other than Safaricom, Airtel or Telkom")
)

// nsnLen is the length of a Kenyan mobile national significant number, the
// digits after the country code 254.
const nsnLen = 9

// Number is a normalised Kenyan mobile number.
type Number struct {
	// E164 is "+254" followed by the 9-digit NSN, e.g. "+254712345678":
	// the form Tuma stores and displays.
	E164 string
	// Network is the network that serves the number's range by default.
	// Mobile number portability means a few numbers have moved elsewhere.
	Network Network
}

// Plan maps Kenyan mobile number ranges to networks by longest prefix. It is
// immutable once built and safe for concurrent use. The zero Plan knows no
// ranges, so it rejects every number.
type Plan struct {
	nodes []planNode // a digit trie; nodes[0] is the root
	rows  []planRow  // the parsed rows, sorted by prefix
}

// planNode is one trie node. A child index of 0 means no child, since the
// root is never anyone's child.
type planNode struct {
	next [10]uint32
	val  planVal
}

// planVal is what a plan row says about its range: a Network, or other.
type planVal uint8

const (
	valNone  planVal = 0
	valOther planVal = 0xff // a valid range on a network we do not reach
)

type planRow struct {
	prefix string
	val    planVal
}

var defaultPlan = sync.OnceValue(func() *Plan {
	p, err := ParsePlan(strings.NewReader(planKE))
	if err != nil {
		// plan_ke.tsv is generated and checked by the tests, so this
		// means a broken build rather than bad input.
		panic("carriers: embedded plan_ke.tsv: " + err.Error())
	}
	return p
})

// DefaultPlan returns the Kenyan numbering plan built into the binary. It is
// parsed on first use and shared afterwards.
func DefaultPlan() *Plan {
	return defaultPlan()
}

// ParsePlan reads a numbering plan in the format of plan_ke.tsv: one range a
// line, as an NSN prefix (1 to 9 digits after +254, starting with 1 or 7)
// and a network name (safaricom, airtel, telkom, or other for a valid
// mobile range on a network Tuma does not reach), separated by a tab or
// spaces. Blank lines and lines starting with # are ignored. The longest
// matching prefix decides; numbers under no prefix are invalid.
func ParsePlan(r io.Reader) (*Plan, error) {
	var rows []planRow
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		row, err := parsePlanRow(text)
		if err != nil {
			return nil, fmt.Errorf("carriers: plan line %d: %w", line, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("carriers: reading plan: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("carriers: plan has no ranges")
	}
	slices.SortFunc(rows, func(a, b planRow) int { return strings.Compare(a.prefix, b.prefix) })

	p := &Plan{nodes: make([]planNode, 1), rows: rows}
	for _, row := range rows {
		n := uint32(0)
		for i := range len(row.prefix) {
			d := row.prefix[i] - '0'
			if p.nodes[n].next[d] == 0 {
				p.nodes[n].next[d] = uint32(len(p.nodes))
				p.nodes = append(p.nodes, planNode{})
			}
			n = p.nodes[n].next[d]
		}
		if p.nodes[n].val != valNone {
			return nil, fmt.Errorf("carriers: plan lists prefix %s twice", row.prefix)
		}
		p.nodes[n].val = row.val
	}
	return p, nil
}

func parsePlanRow(text string) (planRow, error) {
	f := strings.Fields(text)
	if len(f) != 2 {
		return planRow{}, fmt.Errorf("want 2 fields (prefix, network), got %d", len(f))
	}
	prefix, name := f[0], f[1]
	if len(prefix) > nsnLen || (prefix[0] != '1' && prefix[0] != '7') || strings.Trim(prefix, "0123456789") != "" {
		return planRow{}, fmt.Errorf("prefix %q is not 1 to %d digits after +254 starting with 1 or 7", prefix, nsnLen)
	}
	if name == "other" {
		return planRow{prefix, valOther}, nil
	}
	n, ok := ParseNetwork(name)
	if !ok {
		return planRow{}, fmt.Errorf("unknown network %q (want safaricom, airtel, telkom or other)", name)
	}
	return planRow{prefix, planVal(n)}, nil
}

// lookup returns the value of the longest prefix of nsn in the plan.
func (p *Plan) lookup(nsn *[nsnLen]byte) planVal {
	if len(p.nodes) == 0 {
		return valNone
	}
	best := valNone
	n := &p.nodes[0]
	for _, c := range nsn {
		next := n.next[c-'0']
		if next == 0 {
			break
		}
		n = &p.nodes[next]
		if n.val != valNone {
			best = n.val
		}
	}
	return best
}

// Normalize parses a Kenyan mobile number and finds its network.
//
// Spaces, '-', '.', '(' and ')' are ignored anywhere. What remains must be
// one of 07XXXXXXXX or 01XXXXXXXX (national), 2547XXXXXXXX or 2541XXXXXXXX,
// or the same with a leading '+'. Anything else, including a bare 9-digit
// NSN, the 00 or 000 international prefixes and "+2540...", is rejected
// with ErrInvalidNumber, as is a number in a range that the plan does not
// list. A range marked other gives ErrUnsupportedNetwork, with E164 set and
// Network unknown.
//
// On success the only allocation is the E164 string.
func (p *Plan) Normalize(raw string) (Number, error) {
	nsn, v := parseNSN(p, raw)
	if v == valNone {
		return Number{}, ErrInvalidNumber
	}
	var e164 [1 + 3 + nsnLen]byte
	e164[0], e164[1], e164[2], e164[3] = '+', '2', '5', '4'
	copy(e164[4:], nsn[:])
	if v == valOther {
		// Still a real Kenyan number (fine as a contact phone), just not one we can send to.
		return Number{E164: string(e164[:])}, ErrUnsupportedNetwork
	}
	return Number{E164: string(e164[:]), Network: Network(v)}, nil
}

// Parse is Normalize for bulk input: it reads raw bytes and returns the NSN as a number
// (the digits after +254) without allocating.
func (p *Plan) Parse(raw []byte) (nsn uint32, n Network, err error) {
	digits, v := parseNSN(p, raw)
	if v == valNone {
		return 0, NetworkUnknown, ErrInvalidNumber
	}
	for _, d := range digits {
		nsn = nsn*10 + uint32(d-'0')
	}
	if v == valOther {
		return nsn, NetworkUnknown, ErrUnsupportedNetwork
	}
	return nsn, Network(v), nil
}

// parseNSN cleans and checks a number in any accepted form and looks its range up.
func parseNSN[T string | []byte](p *Plan, raw T) ([nsnLen]byte, planVal) {
	var nsn [nsnLen]byte
	var digits [12]byte
	n := 0
	plus := false
	for i := range len(raw) {
		switch c := raw[i]; {
		case '0' <= c && c <= '9':
			if n == len(digits) {
				return nsn, valNone
			}
			digits[n] = c
			n++
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		case c == '+' && n == 0 && !plus:
			plus = true
		default:
			return nsn, valNone
		}
	}
	switch {
	case n == 10 && !plus && digits[0] == '0':
		copy(nsn[:], digits[1:10])
	case n == 12 && digits[0] == '2' && digits[1] == '5' && digits[2] == '4':
		copy(nsn[:], digits[3:12])
	default:
		return nsn, valNone
	}
	if nsn[0] != '1' && nsn[0] != '7' {
		return nsn, valNone
	}
	return nsn, p.lookup(&nsn)
}
