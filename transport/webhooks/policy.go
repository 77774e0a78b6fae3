// Package webhooks delivers the events of persistence's outbox to the tenants' endpoints
// (CONTRACT §14): the rules an endpoint's URL must meet, Standard Webhooks signatures, an HTTP
// client that dials only what the rules allow, and the Deliverer that runs the attempts.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrURLNotAllowed is what every URL refusal is (errors.Is): problem url_not_allowed, field url.
var ErrURLNotAllowed = errors.New("webhook url not allowed")

// URLError says why a URL is refused.
type URLError struct{ Reason string }

func (e *URLError) Error() string        { return "url " + e.Reason }
func (e *URLError) Is(target error) bool { return target == ErrURLNotAllowed }

// Resolver looks a host's addresses up (net.DefaultResolver; tests give their own).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Policy is where webhooks may go: https only, and never to an address in a loopback,
// private, link-local, shared (CGNAT) or unspecified range, checked on the resolved address
// when an endpoint is saved and again at every dial (so a name that resolves elsewhere later,
// DNS rebinding, is refused then). AllowPrivate lifts both rules (tests, local development).
type Policy struct {
	AllowPrivate bool
	Resolver     Resolver // nil: net.DefaultResolver
}

func (p Policy) resolver() Resolver {
	if p.Resolver == nil {
		return net.DefaultResolver
	}
	return p.Resolver
}

// CheckURL checks an endpoint's URL as it is saved: a *URLError when refused.
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return &URLError{"must be an absolute URL without credentials or fragment"}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	default:
		return &URLError{"must use https"}
	}
	if p.AllowPrivate {
		return nil
	}
	_, err = p.resolve(ctx, u.Hostname())
	return err
}

// resolve returns a host's addresses if every one of them is allowed.
func (p Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !p.allowed(a) {
			return nil, &URLError{fmt.Sprintf("must not point to %s (a loopback, private or link-local address)", a)}
		}
		return []netip.Addr{a}, nil
	}
	ips, err := p.resolver().LookupIPAddr(ctx, host)
	if err != nil {
		return nil, &URLError{fmt.Sprintf("host %s does not resolve", host)}
	}
	var out []netip.Addr
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		if !p.allowed(a) {
			return nil, &URLError{fmt.Sprintf("host %s resolves to %s (a loopback, private or link-local address)", host, a.Unmap())}
		}
		out = append(out, a.Unmap())
	}
	if len(out) == 0 {
		return nil, &URLError{fmt.Sprintf("host %s has no address", host)}
	}
	return out, nil
}

// sharedSpace is RFC 6598's carrier-grade NAT range, private in all but name.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

func (p Policy) allowed(a netip.Addr) bool {
	if p.AllowPrivate {
		return true
	}
	a = a.Unmap()
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() &&
		!a.IsInterfaceLocalMulticast() && !a.IsMulticast() && !a.IsUnspecified() && !sharedSpace.Contains(a) &&
		!(a.Is4() && a.As4()[0] == 0) // 0.0.0.0/8: "this network"
}

// dial connects to a resolved, allowed address of addr's host. The dialer's Control checks
// the address actually connected to once more, whatever the path to it.
func (p Policy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !p.allowed(ap.Addr()) {
			return &URLError{fmt.Sprintf("must not point to %s", address)}
		}
		return nil
	}}
	if p.AllowPrivate {
		return d.DialContext(ctx, network, addr)
	}
	ips, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var last error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}
