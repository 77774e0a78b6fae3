// Package wallet is the dashboard's wallet page (/app/wallet): the balance, a top-up that
// opens the payment provider's checkout, the ledger with its filter and pages, and the
// pricing tiers with the account's progress. Payers come back here from a checkout
// (?topup=success|failed). Each action is the JSON API's operation (transport/api/wallet).
package wallet

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	walletapi "github.com/tuma-sms/tuma/transport/api/wallet"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the wallet operations the JSON API runs too (wallet.Handler).
type Operations interface {
	Topup(ctx context.Context, rc *fasthttp.RequestCtx, accountID uuid.UUID, read func() (walletapi.TopupRequest, error)) ([]byte, error)
	Transactions(ctx context.Context, rc *fasthttp.RequestCtx, accountID uuid.UUID) (api.Envelope[persistence.Transaction], error)
}

// Store is what the page reads: the wallet as GET /wallet and /wallet/pricing read it, and
// the payment a payer comes back from.
type Store interface {
	Wallet(ctx context.Context, accountID uuid.UUID) (persistence.Wallet, error)
	PaymentByReference(ctx context.Context, reference string) (persistence.Payment, error)
}

// Page serves the wallet.
type Page struct {
	web.Kit[Operations, Store]
}

// New returns the page.
func New(site *web.Site, ops Operations, store Store) (*Page, error) {
	kit, err := web.NewKit(site, templates, ops, store)
	if err != nil {
		return nil, err
	}
	return &Page{Kit: kit}, nil
}

// RegisterPages adds the routes.
func (p *Page) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/wallet", p.wallet)
	r.Page("POST", "/app/wallet/topup", p.topup)
	r.Page("GET", "/app/wallet/checkout/{reference}", p.checkout)
}

// data is what the template shows.
type data struct {
	Wallet   persistence.Wallet
	Pricing  walletapi.Pricing
	Tiers    []tierRow
	Price    string   // the account's price per SMS
	Next     *tierRow // the tier the account reaches next (nil at the top)
	Progress float64  // percent of the way from this tier's start to the next one's
	Topup    *web.Form
	Key      string // the top-up form's Idempotency-Key: one checkout however often it is sent

	Filter       *web.Form
	Types        []option
	Transactions []txRow
	Total        int64
	Older        string // the address of the next page, "" on the last
	Paged        bool   // a page after the first is shown
}

type option struct{ Value, Label string }

// types are the ledger's entry kinds, as the filter offers them.
var types = []option{
	{string(persistence.TxTopup), "Top-ups"},
	{string(persistence.TxDebit), "Sends"},
	{string(persistence.TxRefund), "Refunds"},
	{string(persistence.TxSenderIDFee), "Sender ID fees"},
}

func typeLabel(t persistence.TransactionType) string {
	for _, o := range types {
		if o.Value == string(t) {
			return strings.TrimSuffix(o.Label, "s")
		}
	}
	return string(t)
}

type tierRow struct {
	walletapi.Tier
	Range   string
	Price   string
	Current bool
}

type txRow struct {
	persistence.Transaction
	Kind   string
	Amount string // a send's amount is shown as money out
}

func (p *Page) wallet(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id := web.AccountID(rc)
	to, err := p.feeReturn(ctx, rc, id)
	if err != nil {
		return err
	}
	if to != "" {
		return api.SeeOther(rc, to)
	}
	d, status, err := p.load(ctx, rc, id, web.NewForm())
	if err != nil {
		return err
	}
	return p.Views.Render(ctx, rc, status, "wallet", &web.Page{Title: "Wallet", Nav: "/app/wallet", Data: d,
		Banners: landingBanners(rc)})
}

// load reads what the page shows; a bad filter in the address is shown beside the filter,
// with its status, and lists nothing.
func (p *Page) load(ctx context.Context, rc *fasthttp.RequestCtx, id uuid.UUID, topup *web.Form) (data, int, error) {
	d := data{Topup: topup, Key: uuid.NewString(), Types: types, Filter: web.NewForm()}
	w, err := p.Store.Wallet(ctx, id)
	if err != nil {
		return d, 0, err
	}
	d.Wallet, d.Pricing = w, walletapi.PricingOf(w)
	d.Tiers, d.Progress = tiers(d.Pricing)
	d.Price = web.KES(int64(d.Pricing.PricePerSMS))
	for i := range d.Tiers {
		if n := d.Pricing.NextTier; n != nil && d.Tiers[i].Name == n.Name {
			d.Next = &d.Tiers[i]
		}
	}

	q := rc.QueryArgs()
	d.Filter.Set("type", string(q.Peek("type")))
	d.Paged = len(q.Peek("cursor")) > 0 || len(q.Peek("page")) > 0
	e, err := p.Ops.Transactions(ctx, rc, id)
	var prob *api.Problem
	if errors.As(err, &prob) && prob.Status < http.StatusInternalServerError {
		d.Filter.Fail(prob)
		if len(d.Filter.ErrorsOf("type")) == 0 { // the cursor or page of an old or altered address
			d.Filter.Message = "This list's address is not valid any more."
		}
		return d, prob.Status, nil
	}
	if err != nil {
		return d, 0, err
	}
	d.Total = e.Total
	for _, t := range e.Data {
		amount := web.KES(t.AmountCents)
		if t.Type == persistence.TxDebit {
			amount = "−" + amount
		}
		d.Transactions = append(d.Transactions, txRow{Transaction: t, Kind: typeLabel(t.Type), Amount: amount})
	}
	if e.NextCursor != nil {
		next := url.Values{"cursor": {*e.NextCursor}}
		if t := d.Filter.Get("type"); t != "" {
			next.Set("type", t)
		}
		d.Older = "/app/wallet?" + next.Encode() + "#transactions-h"
	}
	return d, http.StatusOK, nil
}

// tiers are the volume ladder's rows and how far the account is from its tier's start to
// the next.
func tiers(pr walletapi.Pricing) ([]tierRow, float64) {
	rows := make([]tierRow, len(pr.AllTiers))
	start := int64(0)
	for i, t := range pr.AllTiers {
		rows[i] = tierRow{Tier: t, Price: web.KES(int64(t.PricePerSMS)), Current: t.Name == pr.TierName}
		if t.MaxSMS == nil {
			rows[i].Range = web.Thousands(t.MinSMS) + " and more"
		} else {
			rows[i].Range = web.Thousands(t.MinSMS) + " to " + web.Thousands(*t.MaxSMS)
		}
		if pr.LifetimeSMS >= t.MinSMS {
			start = t.MinSMS
		}
	}
	if pr.NextTier == nil || pr.NextTier.MinSMS <= start {
		return rows, 100
	}
	return rows, 100 * float64(pr.LifetimeSMS-start) / float64(pr.NextTier.MinSMS-start)
}

// topup opens a top-up's checkout, once per form (its Idempotency-Key), and sends the payer
// to it; a refused amount is shown beside the field.
func (p *Page) topup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id := web.AccountID(rc)
	f := web.ReadForm(rc)
	if k := f.Get("idempotency_key"); k != "" {
		rc.Request.Header.Set("Idempotency-Key", k)
	}
	// People write amounts as "1,500" or "1 500"; the API reads a JSON number.
	amount := strings.NewReplacer(",", "", " ", "", "\u00a0", "").Replace(f.Get("amount_kes"))
	body, err := p.Ops.Topup(ctx, rc, id, func() (walletapi.TopupRequest, error) {
		return walletapi.TopupRequest{AmountKES: json.RawMessage(amount)}, nil
	})
	if err != nil {
		d, _, lerr := p.load(ctx, rc, id, f)
		if lerr != nil {
			return lerr
		}
		return p.Views.RenderForm(ctx, rc, "wallet", &web.Page{Title: "Wallet", Nav: "/app/wallet", Data: d, Form: f}, err)
	}
	return web.ToCheckout(rc, body)
}

// landingBanners are the messages of a payer's return (?topup=success|failed&reason=…): a
// payment the provider has not confirmed yet is not said to have failed.
func landingBanners(rc *fasthttp.RequestCtx) []web.Banner {
	q := rc.QueryArgs()
	if string(q.Peek("topup")) == "failed" && string(q.Peek("reason")) == "pending" {
		return []web.Banner{{Kind: "info", Text: "We have not heard from the payment provider yet. If you paid, your wallet is credited as soon as the payment is confirmed: this page shows it then."}}
	}
	return web.LandingBanners(rc)
}

// feeReturn is where a payer back from a sender ID fee's checkout goes: that sender ID's
// page, with the outcome ("" for a top-up, shown here). Every payment returns to one address.
func (p *Page) feeReturn(ctx context.Context, rc *fasthttp.RequestCtx, id uuid.UUID) (string, error) {
	q := rc.QueryArgs()
	outcome, ref := string(q.Peek("topup")), string(q.Peek("reference"))
	if outcome == "" || ref == "" {
		return "", nil
	}
	pay, err := p.Store.PaymentByReference(ctx, ref)
	if errors.Is(err, persistence.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if pay.AccountID != id || pay.Purpose != persistence.PurposeSenderFee || pay.SenderID == nil {
		return "", nil
	}
	switch {
	case outcome == "success":
		p.Site.Flash(rc, "success", "The registration fee is paid. Thank you!")
	case string(q.Peek("reason")) == "pending":
		p.Site.Flash(rc, "info", "We have not heard from the payment provider yet. If you paid, the fee shows as paid as soon as the payment is confirmed.")
	default:
		p.Site.Flash(rc, "error", "The fee payment did not go through, and nothing was charged. You can pay again below.")
	}
	return "/app/senders/" + pay.SenderID.String(), nil
}
