// Handing a payer to the payment provider's checkout.

package web

import (
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	walletapi "github.com/tuma-sms/tuma/transport/api/wallet"
)

// ToCheckout answers a form that opened a checkout (a top-up, a sender ID's fee) by sending
// the browser to it; body is the operation's answer. Browsers hold the redirect after a form
// to the page's form-action ('self'), so a checkout on another site (a real provider's, not
// the sandbox's) is reached through a page of ours that links to it.
func ToCheckout(rc *fasthttp.RequestCtx, body []byte) error {
	target, ref, err := walletapi.ReadCheckout(body)
	if err != nil {
		return err
	}
	rc.Response.Header.Del("Idempotent-Replayed") // the API's word on a repeated request
	if u, err := url.Parse(target); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == string(rc.Host()) {
		return api.SeeOther(rc, target)
	}
	return api.SeeOther(rc, "/app/wallet/checkout/"+url.PathEscape(ref))
}
