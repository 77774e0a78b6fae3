// Sender IDs: an account's applications for its own sender names, their documents, the fee's
// checkout, the default sender, and the letters' templates.

package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/documents"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Senders is what the sender ID endpoints need from the store.
type Senders interface {
	CreateSenderID(ctx context.Context, n persistence.NewSenderID) (persistence.SenderID, error)
	SenderIDs(ctx context.Context, accountID uuid.UUID) ([]persistence.SenderID, error)
	SenderIDByID(ctx context.Context, accountID, id uuid.UUID) (persistence.SenderID, error)
	CheckSenderEvent(ctx context.Context, accountID, id uuid.UUID, event persistence.SenderEvent) (persistence.SenderID, error)
	SubmitSenderDocuments(ctx context.Context, accountID, id uuid.UUID, reapply bool, docs []persistence.SenderDocument) (persistence.SenderID, error)
	SetDefaultSender(ctx context.Context, accountID, id uuid.UUID) (persistence.SenderID, error)
	CancelSenderID(ctx context.Context, accountID, id uuid.UUID) error
	ReviewSenderIDs(ctx context.Context, status persistence.SenderStatus, p persistence.Page) ([]persistence.SenderID, int64, error)
	ApproveSenderID(ctx context.Context, id uuid.UUID, note func(persistence.SenderID) persistence.NewNotification) (persistence.SenderID, error)
	RejectSenderID(ctx context.Context, id uuid.UUID, reason string, note func(persistence.SenderID) persistence.NewNotification) (persistence.SenderID, error)
	PendingSenderFee(ctx context.Context, accountID, senderID uuid.UUID) (*persistence.Payment, error)
}

// Documents keeps uploaded files (persistence/documents in a folder, or an object store).
type Documents interface {
	Put(ctx context.Context, key string, r io.Reader, limit int64) (documents.Stored, error)
	Delete(ctx context.Context, key string) error
}

type senderJSON struct {
	ID              uuid.UUID                `json:"id"`
	Name            string                   `json:"name"`
	Network         string                   `json:"network"`
	Purpose         string                   `json:"purpose"`
	Status          persistence.SenderStatus `json:"status"`
	IsActive        bool                     `json:"is_active"`
	IsDefault       bool                     `json:"is_default"`
	RegistrationFee kes                      `json:"registration_fee"`
	FeePaid         bool                     `json:"fee_paid"`
	RejectionReason *string                  `json:"rejection_reason"`
	CreatedAt       timestamp                `json:"created_at"`
	SubmittedAt     *timestamp               `json:"submitted_at"`
	ReviewedAt      *timestamp               `json:"reviewed_at"`
}

func newSenderJSON(s persistence.SenderID) senderJSON {
	return senderJSON{ID: s.ID, Name: s.Name, Network: s.Network, Purpose: s.Purpose, Status: s.Status, IsActive: s.Active,
		IsDefault: s.Default, RegistrationFee: kes(s.FeeCents), FeePaid: s.FeePaid, RejectionReason: s.RejectionReason,
		CreatedAt: timestamp(s.CreatedAt), SubmittedAt: timestampPtr(s.SubmittedAt), ReviewedAt: timestampPtr(s.ReviewedAt)}
}

// adminSenderJSON is the operators' view: whose application it is.
type adminSenderJSON struct {
	senderJSON
	AccountID uuid.UUID `json:"account_id"`
}

func (s *Server) listSenders(ctx context.Context, rc *fasthttp.RequestCtx) error {
	list, err := s.Senders.SenderIDs(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]senderJSON, len(list))
	for i, snd := range list {
		out[i] = newSenderJSON(snd)
	}
	return writeJSON(rc, http.StatusOK, struct {
		System  string       `json:"system"`
		Senders []senderJSON `json:"senders"`
	}{s.opts.SharedSender, out})
}

func (s *Server) createSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in struct {
		Name    *string `json:"name"`
		Purpose *string `json:"purpose"`
		Network *string `json:"network"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return err
	}
	var fe fieldErrors
	name := ""
	switch {
	case in.Name == nil:
		fe.add("name", "is required")
	default:
		var msg string
		if name, msg = normaliseSenderName(*in.Name); msg != "" {
			fe.add("name", msg)
		}
	}
	purpose := ""
	if in.Purpose != nil {
		purpose = strings.TrimSpace(*in.Purpose)
		if n := len([]rune(purpose)); n > 500 {
			fe.add("purpose", "must be at most 500 characters")
		}
	}
	network := ""
	if in.Network == nil {
		fe.add("network", "is required")
	} else if _, ok := s.opts.SenderFees[*in.Network]; !ok {
		fe.add("network", "must be one of safaricom, airtel, telkom, all")
	} else {
		network = *in.Network
	}
	if err := fe.err(); err != nil {
		return err
	}
	snd, err := s.Senders.CreateSenderID(ctx, persistence.NewSenderID{AccountID: principal(rc).AccountID, Name: name,
		Network: network, Purpose: purpose, FeeCents: s.opts.SenderFees[network]})
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusCreated, newSenderJSON(snd))
}

// normaliseSenderName strips spaces and upper-cases; the result must be 2 to 11 letters and
// digits. msg says what is wrong ("" when it is fine).
func normaliseSenderName(raw string) (name, msg string) {
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r == ' ' || r == '\t':
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			return "", "must be letters and digits only (spaces are removed)"
		}
		if b.Len() > 11 {
			return "", "must be 2 to 11 letters and digits"
		}
	}
	if b.Len() < 2 {
		return "", "must be 2 to 11 letters and digits"
	}
	return b.String(), ""
}

// senderFor reads the {id} of a sender path that must be the caller's.
func (s *Server) senderFor(ctx context.Context, rc *fasthttp.RequestCtx) (uuid.UUID, persistence.SenderID, error) {
	id, err := pathID(rc, "id")
	if err != nil {
		return uuid.Nil, persistence.SenderID{}, err
	}
	snd, err := s.Senders.SenderIDByID(ctx, principal(rc).AccountID, id)
	return id, snd, err
}

// documents is POST /senders/{id}/documents; reapply is POST /senders/{id}/re-apply.
func (s *Server) submitDocuments(reapply bool) handler {
	event := persistence.EventSubmitDocuments
	if reapply {
		event = persistence.EventReapply
	}
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		acct := principal(rc).AccountID
		id, err := pathID(rc, "id")
		if err != nil {
			return err
		}
		// Refuse before reading a byte of the files when the state does not allow them.
		snd, err := s.Senders.CheckSenderEvent(ctx, acct, id, event)
		if err != nil {
			return err
		}
		docs, err := s.receiveDocuments(ctx, rc, acct, id, snd.DocumentsRound+1)
		if err != nil {
			return err
		}
		snd, err = s.Senders.SubmitSenderDocuments(ctx, acct, id, reapply, docs)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) { // an unknown outcome keeps its files
				s.forgetDocuments(docs)
			}
			return err
		}
		return writeJSON(rc, http.StatusOK, newSenderJSON(snd))
	}
}

func (s *Server) forgetDocuments(docs []persistence.SenderDocument) {
	for _, d := range docs {
		if err := s.Documents.Delete(context.Background(), d.StorageKey); err != nil {
			s.Log.Warn("delete an unused document", slog.String("key", d.StorageKey), slog.Any("error", err))
		}
	}
}

func (s *Server) paySenderFee(ctx context.Context, rc *fasthttp.RequestCtx) error {
	p := principal(rc)
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	snd, err := s.Senders.CheckSenderEvent(ctx, p.AccountID, id, persistence.EventPay)
	if err != nil {
		return err
	}
	// A checkout already open for this fee is given again rather than a second one: the payer
	// can never pay the same fee twice through two tabs.
	if open, err := s.Senders.PendingSenderFee(ctx, p.AccountID, id); err != nil {
		return err
	} else if open != nil && open.AuthorizationURL != nil && open.AccessCode != nil {
		return writeJSON(rc, http.StatusOK, checkoutJSON{AuthorizationURL: *open.AuthorizationURL, AccessCode: *open.AccessCode,
			Reference: open.Reference, Message: "Send the payer to authorization_url; the fee is recorded once the payment is confirmed."})
	}
	return s.idempotent(ctx, rc, idempotentOp{scope: p.AccountID, namespace: "sender-fee:" + id.String() + ":"},
		func(key *persistence.IdempotencyKey) error {
			body, err := s.startCheckout(ctx, p, key, persistence.NewPayment{AccountID: p.AccountID,
				Purpose: persistence.PurposeSenderFee, SenderID: &id, AmountCents: snd.FeeCents},
				"Send the payer to authorization_url; the fee is recorded once the payment is confirmed.")
			if err != nil {
				return err
			}
			rc.Response.Header.SetContentType("application/json; charset=utf-8")
			rc.SetStatusCode(http.StatusOK)
			rc.SetBody(body)
			return nil
		})
}

func (s *Server) setDefaultSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := principal(rc).AccountID
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	snd, err := s.Senders.SetDefaultSender(ctx, acct, id)
	if err != nil {
		return err
	}
	// The very next send must be priced and sent with the new default.
	if err := s.Engine.AccountChanged(ctx, acct); err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newSenderJSON(snd))
}

func (s *Server) cancelSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := principal(rc).AccountID
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	if err := s.Senders.CancelSenderID(ctx, acct, id); err != nil {
		return err
	}
	if err := s.Engine.AccountChanged(ctx, acct); err != nil { // it may have been the default
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

// The operators' review.

func (s *Server) reviewSenders(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	status := enum(q, "status", persistence.SenderStatuses())
	l := s.list(listReview, uuid.Nil, "status="+string(status))
	page := q.Page(l)
	if err := q.err(); err != nil {
		return err
	}
	if page.After != nil {
		return problem("malformed_query", "cursor: the review queue pages by number")
	}
	list, total, err := s.Senders.ReviewSenderIDs(ctx, status, page)
	if err != nil {
		return err
	}
	out := make([]adminSenderJSON, len(list))
	for i, snd := range list {
		out[i] = adminSenderJSON{senderJSON: newSenderJSON(snd), AccountID: snd.AccountID}
	}
	e := newEnvelope(out, total, page, l, func(a adminSenderJSON) uuid.UUID { return a.ID })
	e.NextCursor = nil
	return writeJSON(rc, http.StatusOK, e)
}

func (s *Server) approveSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	snd, err := s.Senders.ApproveSenderID(ctx, id, func(snd persistence.SenderID) persistence.NewNotification {
		return persistence.NewNotification{Type: "sender_id_approved", Title: "Sender ID " + snd.Name + " approved",
			Message: fmt.Sprintf("Your sender ID %s is approved on %s. Set it as your default to send with it, or name it in sender_id.",
				snd.Name, networkLabel(snd.Network))}
	})
	if err != nil {
		return err
	}
	if err := s.Engine.AccountChanged(ctx, snd.AccountID); err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, adminSenderJSON{senderJSON: newSenderJSON(snd), AccountID: snd.AccountID})
}

func (s *Server) rejectSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	var in struct {
		Reason *string `json:"reason"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return err
	}
	reason := ""
	if in.Reason != nil {
		reason = strings.TrimSpace(*in.Reason)
	}
	switch n := len([]rune(reason)); {
	case n == 0:
		return invalid(FieldError{Field: "reason", Message: "is required"})
	case n > 1000:
		return invalid(FieldError{Field: "reason", Message: "must be at most 1000 characters"})
	}
	snd, err := s.Senders.RejectSenderID(ctx, id, reason, func(snd persistence.SenderID) persistence.NewNotification {
		return persistence.NewNotification{Type: "sender_id_rejected", Title: "Sender ID " + snd.Name + " rejected",
			Message: fmt.Sprintf("Your sender ID %s was rejected: %s. Correct the documents and re-apply; the fee is not charged again.",
				snd.Name, reason)}
	})
	if err != nil {
		return err
	}
	if err := s.Engine.AccountChanged(ctx, snd.AccountID); err != nil { // it may have been the default
		return err
	}
	return writeJSON(rc, http.StatusOK, adminSenderJSON{senderJSON: newSenderJSON(snd), AccountID: snd.AccountID})
}

func networkLabel(n string) string {
	if n == "all" {
		return "every network"
	}
	return strings.ToUpper(n[:1]) + n[1:]
}

// optionalPrincipal authenticates the caller when credentials come with the request: none is
// an anonymous caller (ok false), wrong ones are refused.
func (s *Server) optionalPrincipal(ctx context.Context, rc *fasthttp.RequestCtx) (auth.Principal, bool, error) {
	if len(rc.Request.Header.Peek("X-API-Key")) == 0 && len(rc.Request.Header.Peek("Authorization")) == 0 {
		return auth.Principal{}, false, nil
	}
	p, err := s.authenticate(ctx, rc)
	if err != nil {
		return auth.Principal{}, false, err
	}
	return p, true, nil
}

func timestampPtr(t *time.Time) *timestamp {
	if t == nil {
		return nil
	}
	ts := timestamp(*t)
	return &ts
}
