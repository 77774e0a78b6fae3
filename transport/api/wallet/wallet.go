// Package wallet is the money endpoints: the wallet, its ledger and pricing, top-ups through
// the payment provider (the checkout, the payer's return, the provider's webhook), and the
// operators' credits and pricing.
package wallet

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/payments"
)

// Options configure the endpoints.
type Options struct {
	DashboardURL string      // where the payer's return lands
	Provider     string      // the payment provider's name, as webhooks are recorded under it
	Proxies      api.Proxies // who sent a refused webhook, for the log
}

// Store is what the endpoints need from the store.
type Store interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	Wallet(ctx context.Context, accountID uuid.UUID) (persistence.Wallet, error)
	ListTransactions(ctx context.Context, accountID uuid.UUID, txType persistence.TransactionType, p persistence.Page) ([]persistence.Transaction, int64, error)
	TransactionByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Transaction, error)
	SaveIdempotentBody(ctx context.Context, k persistence.IdempotencyKey, body []byte) error
	RecordWebhook(ctx context.Context, provider, event, reference string, body []byte, outcome string) error
}

// Engine is the actor engine, for commands that change money.
type Engine interface {
	Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error)
	SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error
}

// Starter opens checkouts at the payment provider (Checkouts).
type Starter interface {
	Start(ctx context.Context, key *persistence.IdempotencyKey, np persistence.NewPayment, message string) ([]byte, error)
}

// Confirmer settles a payment on the provider's word.
type Confirmer interface {
	Confirm(ctx context.Context, reference, via string) (payments.Outcome, error)
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Log       *slog.Logger
	Store     Store
	Engine    Engine
	Checkouts Starter
	Confirmer Confirmer
	Webhooks  payments.Schemes // signature schemes a payment webhook may use
	Keys      *api.Keys        // top-ups and credits run once per Idempotency-Key
	Lists     api.Lists
}

// Handler serves the endpoints.
type Handler struct {
	opts      Options
	log       *slog.Logger
	store     Store
	engine    Engine
	checkouts Starter
	confirmer Confirmer
	webhooks  payments.Schemes
	keys      *api.Keys
	lists     api.Lists
}

// New returns the endpoints.
func New(opts Options, d Deps) *Handler {
	return &Handler{opts: opts, log: d.Log, store: d.Store, engine: d.Engine, checkouts: d.Checkouts, confirmer: d.Confirmer,
		webhooks: d.Webhooks, keys: d.Keys, lists: d.Lists}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/wallet", api.Account, h.wallet)
	r.Handle("GET", "/wallet/transactions", api.Account, h.transactions)
	r.Handle("GET", "/wallet/pricing", api.Account, h.pricing)
	r.Handle("POST", "/wallet/topup", api.Account, h.topup)
	r.Handle("GET", "/wallet/callback", api.Public, h.callback)
	r.Handle("POST", "/payments/webhook", api.Public, h.webhook)
	r.Handle("GET", "/pricing/my", api.Account, h.pricing)
	r.Handle("POST", "/admin/accounts/{id}/credit", api.Operator, h.credit)
	r.Handle("PUT", "/admin/accounts/{id}/pricing", api.Operator, h.setPricing)
}

func (h *Handler) wallet(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := h.store.Wallet(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		BalanceKES    api.KES `json:"balance_kes"`
		TotalSpentKES api.KES `json:"total_spent_kes"`
		TotalSMSSent  int64   `json:"total_sms_sent"`
	}{api.KES(w.BalanceCents), api.KES(w.TotalSpentCents), w.TotalSMSSent})
}

type transactionJSON struct {
	ID          uuid.UUID                   `json:"id"`
	Type        persistence.TransactionType `json:"type"`
	AmountKES   api.KES                     `json:"amount_kes"`
	SMSCount    int64                       `json:"sms_count"`
	Reference   *string                     `json:"reference"`
	Description string                      `json:"description"`
	CreatedAt   api.Timestamp               `json:"created_at"`
}

func (h *Handler) transactions(ctx context.Context, rc *fasthttp.RequestCtx) error {
	e, err := h.Transactions(ctx, rc, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]transactionJSON, len(e.Data))
	for i, t := range e.Data {
		out[i] = transactionJSON{ID: t.ID, Type: t.Type, AmountKES: api.KES(t.AmountCents), SMSCount: t.SMSCount,
			Reference: t.Reference, Description: t.Description, CreatedAt: api.Timestamp(t.CreatedAt)}
	}
	return api.WriteJSON(rc, http.StatusOK, api.Envelope[transactionJSON]{Data: out, Total: e.Total, Page: e.Page,
		PageSize: e.PageSize, Pages: e.Pages, NextCursor: e.NextCursor})
}

// Transactions is a page of the account's ledger, newest first, as GET /wallet/transactions
// reads it from the request's query: type, and page and page_size or cursor. A malformed
// parameter is a 400, one out of range a 422.
func (h *Handler) Transactions(ctx context.Context, rc *fasthttp.RequestCtx, accountID uuid.UUID) (api.Envelope[persistence.Transaction], error) {
	q := api.NewQuery(rc)
	txType := api.Enum(q, "type", persistence.TransactionTypes()...)
	l := h.lists.Of(api.TransactionList, accountID, "type="+string(txType))
	page := q.Page(l)
	if err := q.Err(); err != nil {
		return api.Envelope[persistence.Transaction]{}, err
	}
	txs, total, err := h.store.ListTransactions(ctx, accountID, txType, page)
	if err != nil {
		return api.Envelope[persistence.Transaction]{}, err
	}
	return api.NewEnvelope(txs, total, page, l, func(t persistence.Transaction) uuid.UUID { return t.ID }), nil
}

// Tier is one tier of the volume ladder.
type Tier struct {
	Name        string  `json:"name"`
	MinSMS      int64   `json:"min_sms"`
	MaxSMS      *int64  `json:"max_sms"`
	PricePerSMS api.KES `json:"price_per_sms"`
}

// NextTier is the tier an account reaches next.
type NextTier struct {
	Name        string  `json:"name"`
	MinSMS      int64   `json:"min_sms"`
	PricePerSMS api.KES `json:"price_per_sms"`
}

// Pricing is an account's pricing, as GET /wallet/pricing answers it.
type Pricing struct {
	IsInternal    bool      `json:"is_internal"`
	PricePerSMS   api.KES   `json:"price_per_sms"`
	TierName      string    `json:"tier_name"`
	IsOverride    bool      `json:"is_override"`
	LifetimeSMS   int64     `json:"lifetime_sms"`
	NextTier      *NextTier `json:"next_tier"`
	SMSToNextTier int64     `json:"sms_to_next_tier"`
	AllTiers      []Tier    `json:"all_tiers"`
}

// PricingOf describes an account's pricing. The next tier is always the next one of the
// volume ladder, even under an operator override, so customers see their progress.
func PricingOf(w persistence.Wallet) Pricing {
	p := actors.PricingFor(w.LifetimeSMS, w.PricingTier, w.Internal)
	out := Pricing{IsInternal: w.Internal, PricePerSMS: api.KES(p.PriceCents), TierName: p.Tier.Name,
		IsOverride: p.Override, LifetimeSMS: w.LifetimeSMS}
	tiers := actors.Tiers()
	for _, t := range tiers {
		tj := Tier{Name: t.Name, MinSMS: t.MinSMS, PricePerSMS: api.KES(t.PriceCents)}
		if t.MaxSMS >= 0 {
			m := t.MaxSMS
			tj.MaxSMS = &m
		}
		out.AllTiers = append(out.AllTiers, tj)
	}
	if i := actors.TierIndex(w.LifetimeSMS) + 1; i < len(tiers) {
		n := tiers[i]
		out.NextTier = &NextTier{Name: n.Name, MinSMS: n.MinSMS, PricePerSMS: api.KES(n.PriceCents)}
		out.SMSToNextTier = n.MinSMS - w.LifetimeSMS
	}
	return out
}

func (h *Handler) pricing(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := h.store.Wallet(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, PricingOf(w))
}
