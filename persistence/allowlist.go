// Allow-lists: the addresses an SMPP credential may bind from, as a tenant writes them (IPv4
// and IPv6 addresses or networks) and as the SMPP server tests a peer against them.

package persistence

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// MaxAllowListEntries is the most addresses and networks one allow-list may hold.
const MaxAllowListEntries = 50

// maxAllowListEntryLen bounds an entry before it is parsed (the longest IPv6 network in full
// form with an embedded IPv4 address is 49 characters) and quoted back in an error.
const maxAllowListEntryLen = 64

// AllowList is the networks a peer's address must be in; an empty list allows any address.
// Entries are masked networks (an address is a /32 or /128), IPv4 ones never written as
// IPv4-mapped IPv6, each once.
type AllowList []netip.Prefix

// AllowListError refuses one entry of an allow-list (Index, from 0), or the whole list when
// Index is -1.
type AllowListError struct {
	Index   int
	Message string
}

func (e *AllowListError) Error() string {
	if e.Index < 0 {
		return "allow-list " + e.Message
	}
	return fmt.Sprintf("allow-list entry %d %s", e.Index, e.Message)
}

// ParseAllowList reads addresses ("192.0.2.7", "2001:db8::1") and networks in CIDR notation
// ("192.0.2.0/24"). A network with bits set beyond its prefix length is refused rather than
// masked: which one was meant is the tenant's to say. Repeated entries count once.
func ParseAllowList(entries []string) (AllowList, error) {
	if len(entries) > MaxAllowListEntries {
		return nil, &AllowListError{-1, fmt.Sprintf("must hold at most %d addresses or networks", MaxAllowListEntries)}
	}
	out := make(AllowList, 0, len(entries))
	for i, raw := range entries {
		p, msg := parseAllowEntry(strings.TrimSpace(raw))
		if msg != "" {
			return nil, &AllowListError{i, msg}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// parseAllowEntry is one entry as a network, or what is wrong with it.
func parseAllowEntry(s string) (netip.Prefix, string) {
	const notOne = "must be an IPv4 or IPv6 address, or a network such as 192.0.2.0/24"
	switch {
	case s == "":
		return netip.Prefix{}, "is empty"
	case len(s) > maxAllowListEntryLen:
		return netip.Prefix{}, notOne
	case !strings.Contains(s, "/"):
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Sprintf("%q %s", s, notOne)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), ""
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("%q %s", s, notOne)
	}
	if a := p.Addr(); a.Is4In6() {
		// A peer's IPv4 address is tested unmapped, so the network must be IPv4's too.
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Sprintf("%q mixes IPv4-mapped and other IPv6 addresses; write the IPv4 network", s)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Sprintf("%q has bits set beyond its /%d; the network is %s", s, p.Bits(), m)
	}
	return p, ""
}

// Allows reports whether a peer at addr may bind.
func (l AllowList) Allows(addr netip.Addr) bool {
	if len(l) == 0 {
		return true
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range l {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Strings is the list as the API shows it: an address alone, a network in CIDR notation.
func (l AllowList) Strings() []string {
	out := make([]string, len(l))
	for i, p := range l {
		if p.IsSingleIP() {
			out[i] = p.Addr().String()
		} else {
			out[i] = p.String()
		}
	}
	return out
}
