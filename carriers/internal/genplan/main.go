// Command genplan writes the Kenyan mobile numbering plan used by package
// carriers (plan_ke.tsv) from the metadata of github.com/nyaruka/phonenumbers.
//
// The library is the reference for which ranges are valid mobile numbers and
// which carrier they default to, but it costs microseconds per lookup, so the
// carriers package works from this precomputed prefix table instead.
//
// It walks the national significant numbers (NSN, 9 digits) that start with 1
// and 7. Under each prefix it classifies sample numbers with the library; when
// the samples disagree it descends one digit, and when they agree the prefix
// becomes one row. Siblings that end up identical are merged back into their
// parent, and invalid ranges are left out. Run it with `go generate` in the
// carriers directory.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

const (
	nsnLen     = 9
	libraryMod = "github.com/nyaruka/phonenumbers"
	// minDepth is how far the walk always descends before trusting samples.
	// Every prefix of this length is sampled, so a deviating range has to be
	// narrower than that and missed by all samples to go unnoticed. The
	// library's Kenyan validity pattern and carrier keys (such as 254747)
	// are decided within three NSN digits; 4 leaves a margin at a cost of
	// ~140k look-ups (a 5-digit walk gave the same table in v1.8.1).
	minDepth = 4
	// randomSamples is how many pseudo-random numbers are drawn under each
	// child prefix, in addition to its first, middle and last number.
	randomSamples = 4
)

// class is what the library says about one number.
type class string

const (
	invalid   class = ""
	safaricom class = "safaricom"
	airtel    class = "airtel"
	telkom    class = "telkom"
	other     class = "other"
)

// carrierClass maps the library's English carrier names for the networks we
// reach. Every other name on a valid mobile number is "other".
var carrierClass = map[string]class{
	"Safaricom": safaricom,
	"Airtel":    airtel,
	"Telkom":    telkom,
}

type row struct {
	prefix string
	class  class
}

type generator struct {
	rng *rand.Rand
	// others counts the carrier names that were classified as "other",
	// reported so that a renamed network (say "Airtel Kenya") is noticed.
	others map[string]int
	calls  int
	newer  []row // ranges the library does not have yet, taken over it
}

func main() {
	out := flag.String("o", "plan_ke.tsv", "output file")
	newerFile := flag.String("newer", "newer_ke.tsv", "ranges newer than the library, taken over it")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("genplan: ")

	newer, err := readNewer(*newerFile)
	if err != nil {
		log.Fatal(err)
	}
	g := &generator{
		// A fixed seed keeps the output reproducible.
		rng:    rand.New(rand.NewPCG(254, 2026)),
		others: map[string]int{},
		newer:  newer,
	}
	var rows []row
	for _, first := range []string{"1", "7"} {
		rows = append(rows, g.walk(first)...)
	}
	rows = compress(rows)
	rows = slices.DeleteFunc(rows, func(r row) bool { return r.class == invalid })
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.prefix, b.prefix) })

	if err := write(*out, rows); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %d prefixes to %s (%s, %d library look-ups)", len(rows), *out, libraryVersion(), g.calls)
	for _, name := range slices.Sorted(maps.Keys(g.others)) {
		log.Printf("other: %q (%d sample numbers)", name, g.others[name])
	}
}

// walk returns rows covering every NSN under prefix, each row one prefix
// whose samples all agree (invalid rows included; the caller drops them).
func (g *generator) walk(prefix string) []row {
	if len(prefix) == nsnLen {
		return []row{{prefix, g.classify(prefix)}}
	}
	if len(prefix) >= minDepth {
		if c, ok := g.uniform(prefix); ok {
			return []row{{prefix, c}}
		}
	}
	var rows []row
	for d := '0'; d <= '9'; d++ {
		rows = append(rows, g.walk(prefix+string(d))...)
	}
	return rows
}

// uniform samples numbers under each of the ten children of prefix and
// reports whether they all have the same class.
func (g *generator) uniform(prefix string) (class, bool) {
	var first class
	for i, n := range g.samples(prefix) {
		c := g.classify(n)
		if i == 0 {
			first = c
		} else if c != first {
			return "", false
		}
	}
	return first, true
}

// samples returns, for each child digit of prefix, the first, middle and
// last numbers under it and a few pseudo-random ones.
func (g *generator) samples(prefix string) []string {
	var out []string
	rest := nsnLen - len(prefix) - 1
	for d := '0'; d <= '9'; d++ {
		child := prefix + string(d)
		if rest == 0 {
			out = append(out, child)
			continue
		}
		out = append(out,
			child+strings.Repeat("0", rest),
			child+strings.Repeat("5", rest),
			child+strings.Repeat("9", rest))
		for range randomSamples {
			var b strings.Builder
			b.WriteString(child)
			for range rest {
				b.WriteByte(byte('0' + g.rng.IntN(10)))
			}
			out = append(out, b.String())
		}
	}
	return out
}

// classify asks the library about one 9-digit NSN, unless a newer range has it.
func (g *generator) classify(nsn string) class {
	for _, r := range g.newer {
		if strings.HasPrefix(nsn, r.prefix) {
			return r.class
		}
	}
	g.calls++
	num, err := phonenumbers.Parse("+254"+nsn, "")
	if err != nil {
		return invalid
	}
	if !phonenumbers.IsValidNumber(num) || phonenumbers.GetNumberType(num) != phonenumbers.MOBILE {
		return invalid
	}
	name, err := phonenumbers.GetCarrierForNumber(num, "en")
	if err != nil {
		log.Fatalf("carrier for %s: %v", nsn, err)
	}
	if c, ok := carrierClass[name]; ok {
		return c
	}
	g.others[name]++
	return other
}

// compress merges, repeatedly, any ten sibling rows of one class into a
// row for their parent. rows must partition the numbers under their common
// top-level prefixes, as walk's output does.
func compress(rows []row) []row {
	for {
		byPrefix := make(map[string]class, len(rows))
		for _, r := range rows {
			byPrefix[r.prefix] = r.class
		}
		merged := false
		var out []row
		done := map[string]bool{}
		for _, r := range rows {
			if len(r.prefix) < 2 {
				out = append(out, r)
				continue
			}
			parent := r.prefix[:len(r.prefix)-1]
			if done[parent] {
				continue
			}
			same := true
			for d := '0'; d <= '9'; d++ {
				c, ok := byPrefix[parent+string(d)]
				if !ok || c != r.class {
					same = false
					break
				}
			}
			if !same {
				out = append(out, r)
				continue
			}
			done[parent] = true
			merged = true
			out = append(out, row{parent, r.class})
		}
		rows = out
		if !merged {
			return rows
		}
	}
}

func write(path string, rows []row) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "# Code generated by go run ./internal/genplan; DO NOT EDIT.")
	fmt.Fprintf(w, "# Kenyan mobile numbering plan from the metadata of %s, and newer_ke.tsv's newer ranges.\n", libraryVersion())
	fmt.Fprintln(w, "# Columns: NSN prefix (the digits after +254, i.e. the national number without its leading 0: 0110... is 110), TAB, network.")
	fmt.Fprintln(w, "# network is safaricom, airtel, telkom, or other (a valid Kenyan mobile range on a network Tuma does not reach).")
	fmt.Fprintln(w, "# The longest matching prefix wins; a number under no prefix is not a valid Kenyan mobile number.")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\n", r.prefix, r.class)
	}
	return w.Flush()
}

// libraryVersion names the phonenumbers release this binary was built with.
func libraryVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == libraryMod {
				if dep.Replace != nil {
					dep = dep.Replace
				}
				return libraryMod + " " + dep.Version
			}
		}
	}
	return libraryMod + " (unknown version)"
}

// readNewer reads the ranges newer than the library: prefix TAB network per line, # comments.
func readNewer(path string) ([]row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []row
	for i, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		prefix, network, ok := strings.Cut(l, "\t")
		c := class(network)
		if !ok || prefix == "" || strings.Trim(prefix, "0123456789") != "" || (c != safaricom && c != airtel && c != telkom && c != other) {
			return nil, fmt.Errorf("%s:%d: want a digit prefix, a tab and safaricom, airtel, telkom or other; got %q", path, i+1, l)
		}
		rows = append(rows, row{prefix, c})
	}
	return rows, nil
}
