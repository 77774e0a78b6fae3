package persistence_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/persistence"
)

func TestParseAllowList(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string // as shown; nil: refused
		bad  int      // the entry refused (-1: the whole list)
	}{
		{in: nil, want: []string{}},
		{in: []string{"192.0.2.7", " 2001:db8::1 ", "10.0.0.0/8", "2001:db8::/32"}, want: []string{"192.0.2.7", "2001:db8::1", "10.0.0.0/8", "2001:db8::/32"}},
		{in: []string{"192.0.2.7/32", "::ffff:192.0.2.7", "192.0.2.7"}, want: []string{"192.0.2.7"}},
		{in: []string{"::ffff:192.0.2.0/120"}, want: []string{"192.0.2.0/24"}},
		{in: []string{"0.0.0.0/0", "::/0"}, want: []string{"0.0.0.0/0", "::/0"}},
		{in: []string{"192.0.2.7", "10.0.0.5/8"}, bad: 1},
		{in: []string{""}, bad: 0},
		{in: []string{"192.0.2.7", "example.com"}, bad: 1},
		{in: []string{"fe80::1%eth0"}, bad: 0},
		{in: []string{"192.0.2.0/33"}, bad: 0},
		{in: []string{"::ffff:0:0/90"}, bad: 0},
		{in: []string{"192.0.2.07"}, bad: 0},
		{in: []string{strings.Repeat("1", 100)}, bad: 0},
		{in: slices.Repeat([]string{"192.0.2.7"}, persistence.MaxAllowListEntries+1), bad: -1},
	} {
		got, err := persistence.ParseAllowList(c.in)
		if c.want == nil {
			var ae *persistence.AllowListError
			if !errors.As(err, &ae) || ae.Index != c.bad || ae.Message == "" {
				t.Errorf("ParseAllowList(%q) = %v, %v; want entry %d refused", c.in, got, err, c.bad)
			}
			continue
		}
		if err != nil || !slices.Equal(got.Strings(), c.want) {
			t.Errorf("ParseAllowList(%q) = %q, %v; want %q", c.in, got.Strings(), err, c.want)
		}
	}
	if l, err := persistence.ParseAllowList(slices.Repeat([]string{"192.0.2.7"}, persistence.MaxAllowListEntries)); err != nil || len(l) != 1 {
		t.Errorf("%d repeats of one address = %v, %v; want it once", persistence.MaxAllowListEntries, l, err)
	}
}

func TestAllowListAllows(t *testing.T) {
	l, err := persistence.ParseAllowList([]string{"192.0.2.0/24", "2001:db8::1"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"192.0.2.1": true, "192.0.2.255": true, "::ffff:192.0.2.9": true, "192.0.3.1": false,
		"2001:db8::1": true, "2001:db8::2": false, "fe80::1%eth0": false, "127.0.0.1": false,
	} {
		if got := l.Allows(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Allows(%s) = %v; want %v", addr, got, want)
		}
	}
	if !(persistence.AllowList{}).Allows(netip.MustParseAddr("203.0.113.5")) {
		t.Error("an empty allow-list refuses an address; it allows any")
	}
}

// Whatever a tenant sends, an allow-list that parses holds masked networks, each once, none
// IPv4-mapped; it reads back as itself; each of its networks allows its own address. One that
// does not parse names an entry of the list.
func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{"192.0.2.7", "10.0.0.0/8,2001:db8::/32", "::ffff:192.0.2.7", "::ffff:192.0.2.0/120",
		"10.0.0.5/8", "fe80::1%eth0", "", " , ", "0.0.0.0/0,::/0", "1.2.3.4/32,1.2.3.4", "::ffff:0:0/96", "2001:db8::1/128\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		entries := strings.Split(raw, ",")
		l, err := persistence.ParseAllowList(entries)
		if err != nil {
			var ae *persistence.AllowListError
			if !errors.As(err, &ae) || ae.Index < -1 || ae.Index >= len(entries) || ae.Message == "" {
				t.Fatalf("ParseAllowList(%q) error %v names no entry of the list", raw, err)
			}
			return
		}
		if len(l) > persistence.MaxAllowListEntries || len(l) > len(entries) {
			t.Fatalf("ParseAllowList(%q) = %d networks from %d entries", raw, len(l), len(entries))
		}
		for i, p := range l {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" || slices.Contains(l[:i], p) {
				t.Fatalf("ParseAllowList(%q) holds %v", raw, p)
			}
			if !l.Allows(p.Addr()) {
				t.Fatalf("ParseAllowList(%q) does not allow %v, its own network's address", raw, p.Addr())
			}
		}
		again, err := persistence.ParseAllowList(l.Strings())
		if err != nil || !slices.Equal(again, l) {
			t.Fatalf("ParseAllowList(%q) = %v reads back as %v, %v", raw, l, again, err)
		}
	})
}
