// Client addresses behind proxies.

package api

import (
	"net/netip"
	"strings"

	"github.com/valyala/fasthttp"
)

// Proxies are the peers whose X-Forwarded-For is believed (TUMA_TRUSTED_PROXIES).
type Proxies []netip.Prefix

// ClientIP is the address rate limits and logs attribute a request to (see clientAddr).
func (p Proxies) ClientIP(rc *fasthttp.RequestCtx) string {
	peer, ok := netip.AddrFromSlice(rc.RemoteIP())
	if !ok {
		return rc.RemoteIP().String()
	}
	if len(p) == 0 {
		return peer.Unmap().String()
	}
	return clientAddr(peer, rc.Request.Header.PeekAll("X-Forwarded-For"), p).String()
}

// clientAddr finds the client behind trusted proxies. X-Forwarded-For is believed only when
// the peer is a trusted proxy, and then only from the right: each proxy appends the address
// it was reached from, so every hop left of the first untrusted one may be forged by the
// client. A malformed hop ends the walk at the last trusted proxy, which is what reached us.
func clientAddr(peer netip.Addr, xff [][]byte, trusted []netip.Prefix) netip.Addr {
	last := peer.Unmap()
	if !isTrusted(last, trusted) {
		return last
	}
	for i := len(xff) - 1; i >= 0; i-- {
		hops := strings.Split(string(xff[i]), ",")
		for j := len(hops) - 1; j >= 0; j-- {
			hop, ok := parseHop(hops[j])
			if !ok {
				return last
			}
			if !isTrusted(hop, trusted) {
				return hop
			}
			last = hop
		}
	}
	return last // every hop is a trusted proxy
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads one X-Forwarded-For entry: an address, or an address with a port as some
// proxies write it.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}
