package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
)

func (s *Server) wallet(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := s.Queries.Wallet(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, struct {
		BalanceKES    kes   `json:"balance_kes"`
		TotalSpentKES kes   `json:"total_spent_kes"`
		TotalSMSSent  int64 `json:"total_sms_sent"`
	}{kes(w.BalanceCents), kes(w.TotalSpentCents), w.TotalSMSSent})
}

type transactionJSON struct {
	ID          uuid.UUID                   `json:"id"`
	Type        persistence.TransactionType `json:"type"`
	AmountKES   kes                         `json:"amount_kes"`
	SMSCount    int64                       `json:"sms_count"`
	Reference   *string                     `json:"reference"`
	Description string                      `json:"description"`
	CreatedAt   timestamp                   `json:"created_at"`
}

func (s *Server) transactions(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	acct := principal(rc).AccountID
	txType := enum(q, "type", persistence.TransactionTypes())
	l := s.list(listTransactions, acct, "type="+string(txType))
	page := q.Page(l)
	if err := q.err(); err != nil {
		return err
	}
	txs, total, err := s.Queries.ListTransactions(ctx, acct, txType, page)
	if err != nil {
		return err
	}
	out := make([]transactionJSON, len(txs))
	for i, t := range txs {
		out[i] = transactionJSON{ID: t.ID, Type: t.Type, AmountKES: kes(t.AmountCents), SMSCount: t.SMSCount,
			Reference: t.Reference, Description: t.Description, CreatedAt: timestamp(t.CreatedAt)}
	}
	return writeJSON(rc, http.StatusOK, newEnvelope(out, total, page, l, func(t transactionJSON) uuid.UUID { return t.ID }))
}

type tierJSON struct {
	Name        string `json:"name"`
	MinSMS      int64  `json:"min_sms"`
	MaxSMS      *int64 `json:"max_sms"`
	PricePerSMS kes    `json:"price_per_sms"`
}

type nextTierJSON struct {
	Name        string `json:"name"`
	MinSMS      int64  `json:"min_sms"`
	PricePerSMS kes    `json:"price_per_sms"`
}

type pricingJSON struct {
	IsInternal    bool          `json:"is_internal"`
	PricePerSMS   kes           `json:"price_per_sms"`
	TierName      string        `json:"tier_name"`
	IsOverride    bool          `json:"is_override"`
	LifetimeSMS   int64         `json:"lifetime_sms"`
	NextTier      *nextTierJSON `json:"next_tier"`
	SMSToNextTier int64         `json:"sms_to_next_tier"`
	AllTiers      []tierJSON    `json:"all_tiers"`
}

// newPricingJSON describes an account's pricing. The next tier is always the next one of the
// volume ladder, even under an operator override, so customers see their progress.
func newPricingJSON(w persistence.Wallet) pricingJSON {
	p := actors.PricingFor(w.LifetimeSMS, w.PricingTier, w.Internal)
	out := pricingJSON{IsInternal: w.Internal, PricePerSMS: kes(p.PriceCents), TierName: p.Tier.Name,
		IsOverride: p.Override, LifetimeSMS: w.LifetimeSMS}
	tiers := actors.Tiers()
	for _, t := range tiers {
		tj := tierJSON{Name: t.Name, MinSMS: t.MinSMS, PricePerSMS: kes(t.PriceCents)}
		if t.MaxSMS >= 0 {
			m := t.MaxSMS
			tj.MaxSMS = &m
		}
		out.AllTiers = append(out.AllTiers, tj)
	}
	if i := actors.TierIndex(w.LifetimeSMS) + 1; i < len(tiers) {
		n := tiers[i]
		out.NextTier = &nextTierJSON{Name: n.Name, MinSMS: n.MinSMS, PricePerSMS: kes(n.PriceCents)}
		out.SMSToNextTier = n.MinSMS - w.LifetimeSMS
	}
	return out
}

func (s *Server) pricing(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := s.Queries.Wallet(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newPricingJSON(w))
}
