package api

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
)

// adminAccountJSON is the operator's view of an account.
type adminAccountJSON struct {
	userJSON
	Status persistence.AccountStatus `json:"status"`
}

// pathID parses a UUID path parameter; anything else is simply not found.
func pathID(rc *fasthttp.RequestCtx, name string) (uuid.UUID, error) {
	s, _ := rc.UserValue(name).(string)
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, notFound("no such " + name)
	}
	return id, nil
}

func (s *Server) setAccountStatus(status persistence.AccountStatus) handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		id, err := pathID(rc, "id")
		if err != nil {
			return err
		}
		a, err := s.Accounts.SetStatus(ctx, id, status)
		if err != nil {
			return err
		}
		// Every node's cache learns at once, so the account's keys and tokens stop (or start)
		// working everywhere on the next request.
		s.Principals.SetAccountAccess(ctx, id.String(), string(a.Status), a.TokenVersion)
		return writeJSON(rc, http.StatusOK, adminAccountJSON{userJSON: newUserJSON(a), Status: a.Status})
	}
}

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
		return 0, fmt.Sprintf("must be from %s to %s", kesString(minCents), kesString(maxCents))
	}
	return c, ""
}

func kesString(c int64) string { b, _ := kes(c).MarshalJSON(); return string(b) }

// creditJSON is the answer of an operator credit.
type creditJSON struct {
	AccountID   uuid.UUID `json:"account_id"`
	CreditedKES kes       `json:"credited_kes"`
	BalanceKES  kes       `json:"balance_kes"`
}

func (s *Server) credit(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	cents, desc, err := parseCredit(rc.PostBody())
	if err != nil {
		return err
	}
	if _, err := s.Accounts.AccountByID(ctx, id); err != nil {
		return err
	}
	op := idempotentOp{scope: id, namespace: "admin:", fromResource: s.replayCredit}
	return s.idempotent(ctx, rc, op, func(key *persistence.IdempotencyKey) error {
		w, err := s.Engine.Credit(ctx, persistence.NewCredit{AccountID: id, Cents: cents, Type: "topup",
			Reference: "admin-credit", Description: desc, Idempotency: key})
		if err != nil {
			return err
		}
		body, err := json.Marshal(creditJSON{id, kes(cents), kes(w.BalanceCents)})
		if err != nil {
			return err
		}
		if key != nil {
			// The credit's transaction recorded its ledger entry; the body is kept for replays.
			if err := s.Idempotency.SaveIdempotentBody(ctx, *key, body); err != nil {
				s.Log.Warn("keep the replay of an operator credit", "error", err)
			}
		}
		rc.Response.Header.SetContentType("application/json; charset=utf-8")
		rc.SetBody(body)
		return nil
	})
}

// replayCredit answers a repeated credit whose body was not kept (a crash right after it
// committed) from its ledger entry and the balance now.
func (s *Server) replayCredit(ctx context.Context, accountID, entryID uuid.UUID) (any, error) {
	t, err := s.Queries.TransactionByID(ctx, accountID, entryID)
	if err != nil {
		return nil, err
	}
	w, err := s.Queries.Wallet(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return creditJSON{accountID, kes(t.AmountCents), kes(w.BalanceCents)}, nil
}

// parseCredit reads {"amount_kes": 25, "description": "…"}.
func parseCredit(body []byte) (cents int64, desc string, err error) {
	var in struct {
		AmountKES   json.RawMessage `json:"amount_kes"`
		Description string          `json:"description"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return 0, "", err
	}
	var fe fieldErrors
	if len(in.AmountKES) == 0 || string(in.AmountKES) == "null" {
		fe.add("amount_kes", "is required")
	} else if c, msg := parseKES(in.AmountKES, 1, 100_000_000); msg != "" {
		fe.add("amount_kes", msg)
	} else {
		cents = c
	}
	desc = checkText(&fe, "description", in.Description, 0, 200)
	if err := fe.err(); err != nil {
		return 0, "", err
	}
	if desc == "" {
		desc = "Credit from Tuma"
	}
	return cents, desc, nil
}

func (s *Server) setPricing(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	var in struct {
		Tier       *string `json:"tier"`
		IsInternal *bool   `json:"is_internal"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return err
	}
	var fe fieldErrors
	var tier *string
	if in.Tier != nil {
		i, ok := actors.TierByName(*in.Tier)
		if !ok {
			names := []string{}
			for _, t := range actors.Tiers() {
				names = append(names, t.Name)
			}
			fe.add("tier", "must be null or one of "+strings.Join(names, ", "))
		} else {
			name := actors.Tiers()[i].Name
			tier = &name
		}
	}
	if in.IsInternal == nil {
		fe.add("is_internal", "is required")
	}
	if err := fe.err(); err != nil {
		return err
	}
	if _, err := s.Accounts.AccountByID(ctx, id); err != nil {
		return err
	}
	if err := s.Engine.SetPricing(ctx, id, tier, *in.IsInternal); err != nil {
		return err
	}
	w, err := s.Queries.Wallet(ctx, id)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newPricingJSON(w))
}

func (s *Server) promo(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in struct {
		Title      string      `json:"title"`
		Message    string      `json:"message"`
		AccountIDs []uuid.UUID `json:"account_ids"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return err
	}
	var fe fieldErrors
	title := checkText(&fe, "title", in.Title, 1, 120)
	msg := checkText(&fe, "message", in.Message, 1, 2000)
	if err := fe.err(); err != nil {
		return err
	}
	n, err := s.Queries.Broadcast(ctx, in.AccountIDs, persistence.NewNotification{Type: "promo", Title: title, Message: msg})
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusCreated, struct {
		Created int64 `json:"created"`
	}{n})
}
