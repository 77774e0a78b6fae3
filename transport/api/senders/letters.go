// Letters: the templates of the two letters a sender ID application needs, as PDFs.

package senders

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/pdf"
)

// letterTemplate writes one of the letters; company is "" for the blank template.
type letterTemplate func(company, shared string, today time.Time) (title string, lines []pdf.Line)

// letterTemplates are the letters by the name of their route.
func letterTemplates() map[string]letterTemplate {
	return map[string]letterTemplate{"auth-letter": authorisationLetter, "request-letter": requestLetter}
}

func orBlank(s, blank string) string {
	if s == "" {
		return blank
	}
	return s
}

func authorisationLetter(company, _ string, today time.Time) (string, []pdf.Line) {
	c := orBlank(company, "[Company name]")
	return "Sender ID authorisation letter", []pdf.Line{
		{Text: c, Bold: true},
		{Text: "[Postal address]"},
		{Text: "[KRA PIN]"},
		{},
		{Text: today.Format("2 January 2006")},
		{},
		{Text: "To: The Manager, Bulk SMS Services, [Safaricom PLC / Airtel Networks Kenya Ltd / Telkom Kenya Ltd]"},
		{},
		{Text: "RE: AUTHORISATION TO REGISTER AND USE A SENDER ID", Bold: true},
		{},
		{Text: fmt.Sprintf("We, %s, authorise Tuma, our bulk SMS service provider, to register the sender ID "+
			"[SENDER ID] on our behalf on the network named above, and to send messages under it for us.", c)},
		{},
		{Text: "We confirm that the sender ID identifies our business, that we hold the rights to the name it shows, and that " +
			"messages sent under it will comply with the Kenya Information and Communications (Consumer Protection) " +
			"Regulations and the network's content guidelines."},
		{},
		{Text: "We will tell Tuma in writing when this authorisation ends."},
		{},
		{Text: "Yours faithfully,"},
		{},
		{},
		{Text: "______________________________          ______________________________"},
		{Text: "Name and title of signatory                            Company stamp"},
		{Text: "For and on behalf of " + c},
	}
}

func requestLetter(company, shared string, today time.Time) (string, []pdf.Line) {
	c := orBlank(company, "[Company name]")
	return "Sender ID request letter", []pdf.Line{
		{Text: c, Bold: true},
		{Text: "[Postal address]"},
		{},
		{Text: today.Format("2 January 2006")},
		{},
		{Text: "To: Tuma Bulk SMS"},
		{},
		{Text: "RE: REQUEST FOR A SENDER ID", Bold: true},
		{},
		{Text: fmt.Sprintf("%s requests the registration of the sender ID [SENDER ID] (2 to 11 letters and digits) on "+
			"[Safaricom / Airtel / Telkom / all networks], to replace the shared sender %s on our messages.", c, orBlank(shared, "ID"))},
		{},
		{Text: "Purpose of the messages: [transactional notices / reminders / marketing to customers who opted in]."},
		{Text: "Expected monthly volume: [number] messages."},
		{},
		{Text: "Enclosed: certificate of incorporation or business registration, KRA PIN certificate, and the signed " +
			"authorisation letter."},
		{},
		{Text: "Yours faithfully,"},
		{},
		{},
		{Text: "______________________________"},
		{Text: "Name, title and signature"},
		{Text: "For and on behalf of " + c},
	}
}

// letter is GET /senders/templates/{kind}/download: the letter's template as a PDF, with the
// company name filled in when the caller is signed in.
func (h *Handler) letter(ctx context.Context, rc *fasthttp.RequestCtx) error {
	kind, _ := rc.UserValue("kind").(string)
	account := uuid.Nil
	if p := api.Principal(rc); p.Source != "" { // signed in
		account = p.AccountID
	}
	return h.WriteLetter(ctx, rc, kind, account)
}

// WriteLetter answers with a letter's template (kind auth-letter or request-letter) as a PDF
// download, the account's company name filled in (uuid.Nil: the blank template).
func (h *Handler) WriteLetter(ctx context.Context, rc *fasthttp.RequestCtx, kind string, account uuid.UUID) error {
	tmpl, ok := letterTemplates()[kind]
	if !ok {
		return api.NotFound("no such template: auth-letter or request-letter")
	}
	company := ""
	if account != uuid.Nil {
		a, err := h.store.AccountByID(ctx, account)
		if err != nil {
			return err
		}
		company = a.CompanyName
	}
	title, lines := tmpl(company, h.opts.SharedSender, h.now().UTC())
	rc.Response.Header.SetContentType("application/pdf")
	rc.Response.Header.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="tuma-%s.pdf"`, kind))
	rc.Response.Header.Set("Cache-Control", "no-store") // it may carry the company's name
	rc.SetStatusCode(http.StatusOK)
	rc.SetBody(pdf.Page(title, lines))
	return nil
}
