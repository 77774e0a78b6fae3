package webhooks

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/transport/api"
	hooks "github.com/tuma-sms/tuma/transport/webhooks"
)

// names is a resolver of fixed answers.
type names map[string][]string

func (n names) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := n[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []net.IPAddr
	for _, ip := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// The URL rule on names: a name any of whose addresses is loopback, private or link-local is
// url_not_allowed, as is one that does not resolve; with other bad fields, every one is named.
func TestCheckURLByResolvedAddress(t *testing.T) {
	h := New(Deps{URLs: hooks.Policy{Resolver: names{
		"public.example":   {"93.184.216.34"},
		"rebind.example":   {"93.184.216.34", "10.0.0.7"},
		"metadata.example": {"169.254.169.254"},
		"v6loop.example":   {"::1"},
		"cgnat.example":    {"100.64.1.1"},
	}}})
	ctx := context.Background()
	for url, want := range map[string]string{
		"https://public.example/h":   "",
		"https://rebind.example/h":   "url_not_allowed",
		"https://metadata.example/h": "url_not_allowed",
		"https://v6loop.example/h":   "url_not_allowed",
		"https://cgnat.example/h":    "url_not_allowed",
		"https://nowhere.example/h":  "url_not_allowed",
		"http://public.example/h":    "url_not_allowed",
		"":                           "validation_failed",
	} {
		err := h.check(ctx, Endpoint{URL: ptr(url), Events: ptr([]string{"*"})})
		var p *api.Problem
		switch {
		case want == "" && err != nil:
			t.Errorf("%q refused: %v", url, err)
		case want != "" && (!errors.As(err, &p) || p.Code != want || p.Errors[0].Field != "url"):
			t.Errorf("%q: %v; want %s naming url", url, err, want)
		}
	}
	err := h.check(ctx, Endpoint{URL: ptr("https://rebind.example/h"), Events: ptr([]string{"sms.sent"}), BatchSize: ptr(0)})
	var p *api.Problem
	if !errors.As(err, &p) || p.Code != "url_not_allowed" || len(p.Errors) != 3 {
		t.Errorf("three bad fields: %v", err)
	}
}

func TestCheckEvents(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"*"}, ""},
		{[]string{"message.sent", "webhook.test", "sender_id.rejected"}, ""},
		{nil, "at least one"},
		{[]string{"*", "message.sent"}, "alone"},
		{[]string{"message.sent", "Message.Sent"}, "unknown event type"},
	} {
		if got := checkEvents(tc.in); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("checkEvents(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
