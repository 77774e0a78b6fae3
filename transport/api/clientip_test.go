package api

import (
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32")}
	tests := []struct {
		name string
		peer string
		xff  []string
		want string
	}{
		{"untrusted peer: its header is ignored", "198.51.100.9", []string{"203.0.113.1"}, "198.51.100.9"},
		{"trusted peer without a header", "10.0.0.1", nil, "10.0.0.1"},
		{"one proxy", "10.0.0.1", []string{"203.0.113.1"}, "203.0.113.1"},
		{"forged hops left of the client are ignored", "10.0.0.1", []string{"1.2.3.4, 5.6.7.8, 203.0.113.1"}, "203.0.113.1"},
		{"proxies are skipped right to left", "10.0.0.1", []string{"1.2.3.4, 203.0.113.1, 192.0.2.1, 10.9.9.9"}, "203.0.113.1"},
		{"several header lines read as one list", "10.0.0.1", []string{"1.2.3.4, 203.0.113.1", "10.2.2.2"}, "203.0.113.1"},
		{"only proxies: the leftmost", "10.0.0.1", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3"},
		{"malformed hop: the last proxy", "10.0.0.1", []string{"203.0.113.1, bogus, 10.2.2.2"}, "10.2.2.2"},
		{"malformed rightmost: the peer", "10.0.0.1", []string{"203.0.113.1, "}, "10.0.0.1"},
		{"hop with a port", "10.0.0.1", []string{"203.0.113.1:4711"}, "203.0.113.1"},
		{"IPv6 hop", "10.0.0.1", []string{"2001:db8::1"}, "2001:db8::1"},
		{"IPv4-mapped peer", "::ffff:10.0.0.1", []string{"203.0.113.1"}, "203.0.113.1"},
	}
	for _, tt := range tests {
		var xff [][]byte
		for _, h := range tt.xff {
			xff = append(xff, []byte(h))
		}
		if got := clientAddr(netip.MustParseAddr(tt.peer), xff, trusted); got.String() != tt.want {
			t.Errorf("%s: clientAddr(%s, %q) = %s; want %s", tt.name, tt.peer, tt.xff, got, tt.want)
		}
	}
}

func TestUnmatchedMethodsShareOneLabel(t *testing.T) {
	s, _ := bareServer(t, Options{})
	c := serveInMemory(t, s)
	for _, m := range []string{"BREW", "PROPFIND", "X-1", "X-2", "GET"} {
		call(t, c, m, "/no/such/path", "", nil)
	}
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues("unmatched", "other", "404")); got != 4 {
		t.Errorf("unmatched other 404 = %v; want 4", got)
	}
	if got := testutil.CollectAndCount(s.metrics.requests); got != 2 {
		t.Errorf("%d request series; want 2 (GET and other)", got)
	}
}

func TestProbesAreNeverShed(t *testing.T) {
	for _, r := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/{filepath:*}", "/debug/pprof/{path:*}"} {
		if admitted(r) {
			t.Errorf("%s counts against the bound: an overloaded node would hide from its operators", r)
		}
	}
	for _, r := range []string{"/sms/send", "/auth/login", "/admin/accounts/{id}/credit", "unmatched"} {
		if !admitted(r) {
			t.Errorf("%s does not count against the bound", r)
		}
	}
}
