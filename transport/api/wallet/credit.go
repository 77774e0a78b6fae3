// The operators' credits and pricing.

package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// parseKES turns a JSON number of shillings into cents exactly (no float): at most two
// decimals, within [min, max] cents. raw is the field's JSON value.
func parseKES(raw json.RawMessage, minCents, maxCents int64) (int64, string) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || len(raw) == 0 || raw[0] == '"' {
		return 0, "must be a number"
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return 0, "must be a number"
	}
	r.Mul(r, big.NewRat(100, 1))
	if !r.IsInt() {
		return 0, "must have at most two decimal places"
	}
	if !r.Num().IsInt64() {
		return 0, "is out of range"
	}
	c := r.Num().Int64()
	if c < minCents || c > maxCents {
		return 0, fmt.Sprintf("must be from %s to %s", api.KES(minCents), api.KES(maxCents))
	}
	return c, ""
}

// creditJSON is the answer of an operator credit.
type creditJSON struct {
	AccountID   uuid.UUID `json:"account_id"`
	CreditedKES api.KES   `json:"credited_kes"`
	BalanceKES  api.KES   `json:"balance_kes"`
}

func (h *Handler) credit(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	cents, desc, err := parseCredit(rc.PostBody())
	if err != nil {
		return err
	}
	if _, err := h.store.AccountByID(ctx, id); err != nil {
		return err
	}
	op := api.Op{Scope: id, Namespace: "admin:", FromResource: h.replayCredit}
	return h.keys.Run(ctx, rc, op, func(key *persistence.IdempotencyKey) error {
		w, err := h.engine.Credit(ctx, persistence.NewCredit{AccountID: id, Cents: cents, Type: "topup",
			Reference: "admin-credit", Description: desc, Idempotency: key})
		if err != nil {
			return err
		}
		body, err := json.Marshal(creditJSON{id, api.KES(cents), api.KES(w.BalanceCents)})
		if err != nil {
			return err
		}
		if key != nil {
			// The credit's transaction recorded its ledger entry; the body is kept for replays.
			if err := h.store.SaveIdempotentBody(ctx, *key, body); err != nil {
				h.log.Warn("keep the replay of an operator credit", "error", err)
			}
		}
		api.WriteJSONBody(rc, http.StatusOK, body)
		return nil
	})
}

// replayCredit answers a repeated credit whose body was not kept (a crash right after it
// committed) from its ledger entry and the balance now.
func (h *Handler) replayCredit(ctx context.Context, accountID, entryID uuid.UUID) (any, error) {
	t, err := h.store.TransactionByID(ctx, accountID, entryID)
	if err != nil {
		return nil, err
	}
	w, err := h.store.Wallet(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return creditJSON{accountID, api.KES(t.AmountCents), api.KES(w.BalanceCents)}, nil
}

// parseCredit reads {"amount_kes": 25, "description": "…"}.
func parseCredit(body []byte) (cents int64, desc string, err error) {
	var in struct {
		AmountKES   json.RawMessage `json:"amount_kes"`
		Description string          `json:"description"`
	}
	if err := api.ParseJSON(body, &in); err != nil {
		return 0, "", err
	}
	var fe api.FieldErrors
	if len(in.AmountKES) == 0 || string(in.AmountKES) == "null" {
		fe.Add("amount_kes", "is required")
	} else if c, msg := parseKES(in.AmountKES, 1, 100_000_000); msg != "" {
		fe.Add("amount_kes", msg)
	} else {
		cents = c
	}
	desc = api.CheckText(&fe, "description", in.Description, 0, 200)
	if err := fe.Err(); err != nil {
		return 0, "", err
	}
	if desc == "" {
		desc = "Credit from Tuma"
	}
	return cents, desc, nil
}

func (h *Handler) setPricing(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	var in struct {
		Tier       *string `json:"tier"`
		IsInternal *bool   `json:"is_internal"`
	}
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	var fe api.FieldErrors
	var tier *string
	if in.Tier != nil {
		i, ok := actors.TierByName(*in.Tier)
		if !ok {
			names := []string{}
			for _, t := range actors.Tiers() {
				names = append(names, t.Name)
			}
			fe.Add("tier", "must be null or one of "+strings.Join(names, ", "))
		} else {
			name := actors.Tiers()[i].Name
			tier = &name
		}
	}
	if in.IsInternal == nil {
		fe.Add("is_internal", "is required")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	if _, err := h.store.AccountByID(ctx, id); err != nil {
		return err
	}
	if err := h.engine.SetPricing(ctx, id, tier, *in.IsInternal); err != nil {
		return err
	}
	w, err := h.store.Wallet(ctx, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, PricingOf(w))
}
