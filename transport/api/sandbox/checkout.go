// The hosted checkout pages: where the payer pays or cancels, in plain HTML forms.

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// checkout finds the transaction of the checkout page asked for. found is false when the
// answer (a 404 page) is already written, or err says why not.
func (h *Handler) checkout(ctx context.Context, rc *fasthttp.RequestCtx) (t persistence.SandboxTx, found bool, err error) {
	code, _ := rc.UserValue("access_code").(string)
	t, err = h.store.SandboxByAccessCode(ctx, code)
	if errors.Is(err, persistence.ErrNotFound) {
		return t, false, writeHTML(rc, http.StatusNotFound, checkoutView{Title: "Checkout not found",
			Note: "This checkout link is not valid. Start the top-up again from your account."})
	}
	return t, err == nil, err
}

// checkoutPage renders the sandbox's hosted checkout.
func (h *Handler) checkoutPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	t, found, err := h.checkout(ctx, rc)
	if !found {
		return err
	}
	return writeHTML(rc, http.StatusOK, newCheckoutView(t, ""))
}

// checkoutAction is the Pay or Cancel button (a plain form post: no JavaScript needed).
func (h *Handler) checkoutAction(ctx context.Context, rc *fasthttp.RequestCtx) error {
	t, found, err := h.checkout(ctx, rc)
	if !found {
		return err
	}
	code := t.AccessCode
	var status string
	switch string(rc.PostArgs().Peek("action")) {
	case "pay":
		status = "success"
	case "cancel":
		status = "abandoned"
	default:
		return writeHTML(rc, http.StatusBadRequest, newCheckoutView(t, "Choose Pay or Cancel."))
	}
	t, err = h.store.SandboxSettle(ctx, code, status, h.now())
	if err != nil {
		return err
	}
	if t.Status == "success" {
		h.hooks.Wake() // the webhook goes out on its own, as a provider's would
	}
	// Back to the merchant, as Paystack does: the callback URL with the reference.
	return api.SeeOther(rc, returnURL(t))
}

// returnURL is where the payer goes back to: the callback URL with the reference, as Paystack
// sends it.
func returnURL(t persistence.SandboxTx) string {
	return api.WithQuery(t.CallbackURL, url.Values{"trxref": {t.Reference}, "reference": {t.Reference}}.Encode())
}

type checkoutView struct {
	Title     string
	Amount    string // "KES 1,500.00"
	Reference string
	Email     string
	Code      string
	Open      bool // Pay and Cancel are offered
	Note      string
	Error     string
	Back      string // where to go once it is over
}

func newCheckoutView(t persistence.SandboxTx, errText string) checkoutView {
	v := checkoutView{Title: "Pay Tuma", Amount: t.Currency + " " + kesText(t.Amount), Reference: t.Reference, Email: t.Email,
		Code: t.AccessCode, Error: errText, Back: returnURL(t)}
	switch t.Status {
	case "ongoing":
		v.Open = true
		v.Note = "Sandbox checkout: no money moves. Pay confirms the payment as a real provider would; Cancel abandons it."
	case "success":
		v.Title, v.Note = "Payment received", "This payment is complete."
	default:
		v.Title, v.Note = "Payment cancelled", "This payment was cancelled. Start a new top-up to try again."
	}
	return v
}

// kesText renders cents as 1,500.00.
func kesText(c int64) string {
	whole := strconv.FormatInt(c/100, 10)
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String() + "." + strconv.FormatInt(c%100/10, 10) + strconv.FormatInt(c%10, 10)
}

var checkoutTemplate = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;background:#f3f5f4;color:#1d2b25;margin:0}
main{max-width:420px;margin:48px auto;background:#fff;border-radius:10px;box-shadow:0 2px 12px rgba(0,0,0,.08);padding:28px}
h1{font-size:20px;margin:0 0 18px}.amount{font-size:34px;font-weight:700;color:#0b6e4f;margin:6px 0 18px}
dl{display:grid;grid-template-columns:auto 1fr;gap:6px 14px;font-size:14px;margin:0 0 22px}dt{color:#5c6b64}dd{margin:0;word-break:break-all}
.actions{display:flex;gap:12px}button{flex:1;font-size:16px;padding:12px;border-radius:6px;border:1px solid #0b6e4f;cursor:pointer}
.pay{background:#0b6e4f;color:#fff}.cancel{background:#fff;color:#0b6e4f}.note{font-size:13px;color:#5c6b64;margin-top:18px}
.error{color:#a4262c;font-size:14px}.badge{display:inline-block;font-size:11px;background:#fff4ce;color:#6b5200;border-radius:4px;padding:2px 6px;margin-left:6px;vertical-align:middle}
</style></head>
<body><main>
<h1>{{.Title}}<span class="badge">SANDBOX</span></h1>
{{if .Amount}}<div class="amount" id="amount">{{.Amount}}</div>
<dl><dt>Reference</dt><dd id="reference">{{.Reference}}</dd><dt>Email</dt><dd>{{.Email}}</dd></dl>{{end}}
{{if .Error}}<p class="error">{{.Error}}</p>{{end}}
{{if .Open}}<form method="post" action="/checkout/{{.Code}}" class="actions">
<button class="pay" type="submit" name="action" value="pay" id="pay">Pay {{.Amount}}</button>
<button class="cancel" type="submit" name="action" value="cancel" id="cancel">Cancel</button>
</form>{{else if .Back}}<p><a href="{{.Back}}">Back to Tuma</a></p>{{end}}
<p class="note">{{.Note}}</p>
</main></body></html>
`))

func writeHTML(rc *fasthttp.RequestCtx, status int, v checkoutView) error {
	var b bytes.Buffer
	if err := checkoutTemplate.Execute(&b, v); err != nil {
		return err
	}
	rc.Response.Header.SetContentType("text/html; charset=utf-8")
	rc.Response.Header.Set("Cache-Control", "no-store")
	rc.Response.Header.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	rc.SetStatusCode(status)
	rc.SetBody(b.Bytes())
	return nil
}
