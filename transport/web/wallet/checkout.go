// Handing a payer to the payment provider's checkout.

package wallet

import (
	"context"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/payments"
	"github.com/tuma-sms/tuma/transport/web"
)

// checkoutData is what the checkout page shows.
type checkoutData struct {
	Payment persistence.Payment
	URL     string
	Fee     bool
	Back    string
}

// checkout is the page between a form and a checkout on another site: what is paid, and the
// link to pay it. A payment that is closed sends the payer back where it was opened.
func (p *Page) checkout(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ref, _ := rc.UserValue("reference").(string)
	if !payments.ValidReference(ref) {
		return api.NotFound("no such payment")
	}
	pay, err := p.Store.PaymentByReference(ctx, ref)
	if err != nil {
		return err
	}
	if pay.AccountID != web.AccountID(rc) {
		return api.NotFound("no such payment")
	}
	d := checkoutData{Payment: pay, Back: "/app/wallet"}
	if pay.Purpose == persistence.PurposeSenderFee && pay.SenderID != nil {
		d.Fee, d.Back = true, "/app/senders/"+pay.SenderID.String()
	}
	if pay.Status != persistence.PaymentPending || pay.AuthorizationURL == nil {
		p.Site.Flash(rc, "info", "That payment is no longer open. Start a new one if you still want to pay.")
		return api.SeeOther(rc, d.Back)
	}
	d.URL = *pay.AuthorizationURL
	return p.Views.Render(ctx, rc, http.StatusOK, "checkout", &web.Page{Title: "Continue to payment", Nav: "/app/wallet", Data: d})
}
