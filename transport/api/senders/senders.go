// Package senders is the sender ID endpoints: an account's applications for its own sender
// names, their documents, the fee's checkout, the default sender, the letters' templates, and
// the operators' review.
package senders

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
	"github.com/tuma-sms/tuma/transport/api"
)

// Options configure the endpoints.
type Options struct {
	SharedSender string           // the shared sender ID's name (GET /senders says it)
	SenderFees   map[string]int64 // registration fee in cents, by network (safaricom, airtel, telkom, all)
}

// Store is what the endpoints need from the store.
type Store interface {
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
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error) // the company on a letter
}

// Documents keeps uploaded files (persistence/documents in a folder, or an object store).
type Documents interface {
	Put(ctx context.Context, key string, r io.Reader, limit int64) (documents.Stored, error)
	Delete(ctx context.Context, key string) error
}

// Engine is told when an account's senders change: the very next send must use them.
type Engine interface {
	AccountChanged(ctx context.Context, accountID uuid.UUID) error
}

// Checkouts start the payment of a fee at the payment provider (wallet.Checkouts).
type Checkouts interface {
	// Start opens a checkout and returns the answer's body.
	Start(ctx context.Context, key *persistence.IdempotencyKey, np persistence.NewPayment, message string) ([]byte, error)
	// Reopen is the answer's body for a checkout that is open already.
	Reopen(p persistence.Payment, message string) ([]byte, error)
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Log       *slog.Logger
	Store     Store
	Documents Documents // where the applications' files are kept
	Engine    Engine
	Checkouts Checkouts
	Keys      *api.Keys // a fee's checkout opens once per Idempotency-Key
	Lists     api.Lists
	Now       func() time.Time
}

// Handler serves the endpoints.
type Handler struct {
	opts      Options
	log       *slog.Logger
	store     Store
	documents Documents
	engine    Engine
	checkouts Checkouts
	keys      *api.Keys
	lists     api.Lists
	now       func() time.Time
}

// New returns the endpoints.
func New(opts Options, d Deps) *Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Handler{opts: opts, log: d.Log, store: d.Store, documents: d.Documents, engine: d.Engine, checkouts: d.Checkouts,
		keys: d.Keys, lists: d.Lists, now: d.Now}
}

// SharedSender is the shared sender ID's name: an account's messages go under it until one
// of its own is its default.
func (h *Handler) SharedSender() string { return h.opts.SharedSender }

// Fee is a network's registration fee.
type Fee struct {
	Network string // safaricom | airtel | telkom | all
	Cents   int64
}

// Fees are the registration fees of the networks one may apply on, in the order forms list
// them.
func (h *Handler) Fees() []Fee {
	var out []Fee
	for _, n := range []string{"safaricom", "airtel", "telkom", "all"} {
		if c, ok := h.opts.SenderFees[n]; ok {
			out = append(out, Fee{Network: n, Cents: c})
		}
	}
	return out
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/senders", api.Account, h.listSenders)
	r.Handle("POST", "/senders", api.Account, h.createSender)
	r.Upload("POST", "/senders/{id}/documents", api.Account, MaxDocumentsBody, h.submitDocuments(false))
	r.Handle("POST", "/senders/{id}/pay", api.Account, h.paySenderFee)
	r.Upload("POST", "/senders/{id}/re-apply", api.Account, MaxDocumentsBody, h.submitDocuments(true))
	r.Handle("PATCH", "/senders/{id}/set-default", api.Account, h.setDefaultSender)
	r.Handle("DELETE", "/senders/{id}", api.Account, h.cancelSender)
	// Public, and filled in with the company's name for a signed-in caller.
	r.Handle("GET", "/senders/templates/{kind}/download", api.Optional, h.letter)
	r.Handle("GET", "/admin/senders", api.Operator, h.reviewSenders)
	r.Handle("POST", "/admin/senders/{id}/approve", api.Operator, h.approveSender)
	r.Handle("POST", "/admin/senders/{id}/reject", api.Operator, h.rejectSender)
}

type senderJSON struct {
	ID              uuid.UUID                `json:"id"`
	Name            string                   `json:"name"`
	Network         string                   `json:"network"`
	Purpose         string                   `json:"purpose"`
	Status          persistence.SenderStatus `json:"status"`
	IsActive        bool                     `json:"is_active"`
	IsDefault       bool                     `json:"is_default"`
	RegistrationFee api.KES                  `json:"registration_fee"`
	FeePaid         bool                     `json:"fee_paid"`
	RejectionReason *string                  `json:"rejection_reason"`
	CreatedAt       api.Timestamp            `json:"created_at"`
	SubmittedAt     *api.Timestamp           `json:"submitted_at"`
	ReviewedAt      *api.Timestamp           `json:"reviewed_at"`
}

func newSenderJSON(s persistence.SenderID) senderJSON {
	return senderJSON{ID: s.ID, Name: s.Name, Network: s.Network, Purpose: s.Purpose, Status: s.Status, IsActive: s.Active,
		IsDefault: s.Default, RegistrationFee: api.KES(s.FeeCents), FeePaid: s.FeePaid, RejectionReason: s.RejectionReason,
		CreatedAt: api.Timestamp(s.CreatedAt), SubmittedAt: api.TimestampOf(s.SubmittedAt), ReviewedAt: api.TimestampOf(s.ReviewedAt)}
}

// adminSenderJSON is the operators' view: whose application it is.
type adminSenderJSON struct {
	senderJSON
	AccountID uuid.UUID `json:"account_id"`
}

func (h *Handler) listSenders(ctx context.Context, rc *fasthttp.RequestCtx) error {
	list, err := h.store.SenderIDs(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]senderJSON, len(list))
	for i, snd := range list {
		out[i] = newSenderJSON(snd)
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		System  string       `json:"system"`
		Senders []senderJSON `json:"senders"`
	}{h.opts.SharedSender, out})
}

// Application is a request for a sender ID, as POST /senders reads it.
type Application struct {
	Name    *string `json:"name"`
	Purpose *string `json:"purpose"`
	Network *string `json:"network"`
}

// Apply records an account's application for a sender ID: the name normalised, status
// applied, the network's registration fee. Field errors are a 422; the same name and
// network applied for already is persistence.ErrSenderExists.
func (h *Handler) Apply(ctx context.Context, accountID uuid.UUID, in Application) (persistence.SenderID, error) {
	var fe api.FieldErrors
	name := ""
	switch {
	case in.Name == nil:
		fe.Add("name", "is required")
	default:
		var msg string
		if name, msg = normaliseSenderName(*in.Name); msg != "" {
			fe.Add("name", msg)
		}
	}
	purpose := ""
	if in.Purpose != nil {
		purpose = strings.TrimSpace(*in.Purpose)
		if n := len([]rune(purpose)); n > 500 {
			fe.Add("purpose", "must be at most 500 characters")
		}
	}
	network := ""
	if in.Network == nil {
		fe.Add("network", "is required")
	} else if _, ok := h.opts.SenderFees[*in.Network]; !ok {
		fe.Add("network", "must be one of safaricom, airtel, telkom, all")
	} else {
		network = *in.Network
	}
	if err := fe.Err(); err != nil {
		return persistence.SenderID{}, err
	}
	return h.store.CreateSenderID(ctx, persistence.NewSenderID{AccountID: accountID, Name: name,
		Network: network, Purpose: purpose, FeeCents: h.opts.SenderFees[network]})
}

func (h *Handler) createSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in Application
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	snd, err := h.Apply(ctx, api.Principal(rc).AccountID, in)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, newSenderJSON(snd))
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

// Parts reads a multipart body's parts in order, calling each for every one (api.EachPart,
// or a dashboard page's upload).
type Parts = func(each func(p api.FormPart) error) error

// documents is POST /senders/{id}/documents; reapply is POST /senders/{id}/re-apply.
func (h *Handler) submitDocuments(reapply bool) api.Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		acct := api.Principal(rc).AccountID
		id, err := api.PathID(rc, "id")
		if err != nil {
			return err
		}
		snd, err := h.SubmitDocuments(ctx, acct, id, reapply, func(each func(p api.FormPart) error) error {
			return api.EachPart(rc, MaxDocumentsBody, each)
		})
		if err != nil {
			return err
		}
		return api.WriteJSON(rc, http.StatusOK, newSenderJSON(snd))
	}
}

// SubmitDocuments stores an application's four documents, read from parts (at most
// MaxDocumentsBody bytes), and moves it on: applied → documents_submitted, or, with reapply,
// rejected → documents_submitted. A state that does not allow it is refused before a byte of
// the files is read; a missing or bad file is a 422 naming it.
func (h *Handler) SubmitDocuments(ctx context.Context, accountID, id uuid.UUID, reapply bool, parts Parts) (persistence.SenderID, error) {
	event := persistence.EventSubmitDocuments
	if reapply {
		event = persistence.EventReapply
	}
	snd, err := h.store.CheckSenderEvent(ctx, accountID, id, event)
	if err != nil {
		return persistence.SenderID{}, err
	}
	docs, err := h.receiveDocuments(ctx, parts, accountID, id, snd.DocumentsRound+1)
	if err != nil {
		return persistence.SenderID{}, err
	}
	snd, err = h.store.SubmitSenderDocuments(ctx, accountID, id, reapply, docs)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) { // an unknown outcome keeps its files
			h.forgetDocuments(docs)
		}
		return persistence.SenderID{}, err
	}
	return snd, nil
}

func (h *Handler) forgetDocuments(docs []persistence.SenderDocument) {
	for _, d := range docs {
		if err := h.documents.Delete(context.Background(), d.StorageKey); err != nil {
			h.log.Warn("delete an unused document", slog.String("key", d.StorageKey), slog.Any("error", err))
		}
	}
}

// feeMessage says what the answer of a fee's checkout is for.
const feeMessage = "Send the payer to authorization_url; the fee is recorded once the payment is confirmed."

func (h *Handler) paySenderFee(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	body, err := h.PayFee(ctx, rc, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	api.WriteJSONBody(rc, http.StatusOK, body)
	return nil
}

// PayFee opens the checkout of an application's registration fee and returns the answer of
// POST /senders/{id}/pay ({authorization_url, access_code, reference, message}). A checkout
// already open for the fee is given again; a request with an Idempotency-Key header opens at
// most one (a replay is answered as the first time, on rc as well).
func (h *Handler) PayFee(ctx context.Context, rc *fasthttp.RequestCtx, accountID, id uuid.UUID) ([]byte, error) {
	snd, err := h.store.CheckSenderEvent(ctx, accountID, id, persistence.EventPay)
	if err != nil {
		return nil, err
	}
	// A checkout already open for this fee is given again rather than a second one: the payer
	// can never pay the same fee twice through two tabs.
	if open, err := h.store.PendingSenderFee(ctx, accountID, id); err != nil {
		return nil, err
	} else if open != nil && open.AuthorizationURL != nil && open.AccessCode != nil {
		return h.checkouts.Reopen(*open, feeMessage)
	}
	var body []byte
	err = h.keys.Run(ctx, rc, api.Op{Scope: accountID, Namespace: "sender-fee:" + id.String() + ":"},
		func(key *persistence.IdempotencyKey) error {
			var err error
			body, err = h.checkouts.Start(ctx, key, persistence.NewPayment{AccountID: accountID,
				Purpose: persistence.PurposeSenderFee, SenderID: &id, AmountCents: snd.FeeCents}, feeMessage)
			return err
		})
	if err == nil && body == nil { // a replay: Run answered with the first checkout's body
		body = append([]byte(nil), rc.Response.Body()...)
	}
	return body, err
}

func (h *Handler) setDefaultSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	snd, err := h.SetDefault(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newSenderJSON(snd))
}

// SetDefault makes an approved, active sender ID the account's default, for the very next
// send.
func (h *Handler) SetDefault(ctx context.Context, accountID, id uuid.UUID) (persistence.SenderID, error) {
	snd, err := h.store.SetDefaultSender(ctx, accountID, id)
	if err != nil {
		return persistence.SenderID{}, err
	}
	// The very next send must be priced and sent with the new default.
	if err := h.engine.AccountChanged(ctx, accountID); err != nil {
		return persistence.SenderID{}, err
	}
	return snd, nil
}

func (h *Handler) cancelSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if err := h.Cancel(ctx, api.Principal(rc).AccountID, id); err != nil {
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

// Cancel withdraws an application (not an approved, active one).
func (h *Handler) Cancel(ctx context.Context, accountID, id uuid.UUID) error {
	if err := h.store.CancelSenderID(ctx, accountID, id); err != nil {
		return err
	}
	return h.engine.AccountChanged(ctx, accountID) // it may have been the default
}

// The operators' review.

func (h *Handler) reviewSenders(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	status := api.Enum(q, "status", persistence.SenderStatuses()...)
	l := h.lists.Of(api.ReviewList, uuid.Nil, "status="+string(status))
	page := q.Page(l)
	if err := q.Err(); err != nil {
		return err
	}
	if page.After != nil {
		return api.NewProblem("malformed_query", "cursor: the review queue pages by number")
	}
	list, total, err := h.store.ReviewSenderIDs(ctx, status, page)
	if err != nil {
		return err
	}
	out := make([]adminSenderJSON, len(list))
	for i, snd := range list {
		out[i] = adminSenderJSON{senderJSON: newSenderJSON(snd), AccountID: snd.AccountID}
	}
	e := api.NewEnvelope(out, total, page, l, func(a adminSenderJSON) uuid.UUID { return a.ID })
	e.NextCursor = nil
	return api.WriteJSON(rc, http.StatusOK, e)
}

func (h *Handler) approveSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	snd, err := h.store.ApproveSenderID(ctx, id, func(snd persistence.SenderID) persistence.NewNotification {
		return persistence.NewNotification{Type: "sender_id_approved", Title: "Sender ID " + snd.Name + " approved",
			Message: fmt.Sprintf("Your sender ID %s is approved on %s. Set it as your default to send with it, or name it in sender_id.",
				snd.Name, networkLabel(snd.Network))}
	})
	if err != nil {
		return err
	}
	if err := h.engine.AccountChanged(ctx, snd.AccountID); err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, adminSenderJSON{senderJSON: newSenderJSON(snd), AccountID: snd.AccountID})
}

func (h *Handler) rejectSender(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	var in struct {
		Reason *string `json:"reason"`
	}
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	reason := ""
	if in.Reason != nil {
		reason = strings.TrimSpace(*in.Reason)
	}
	switch n := len([]rune(reason)); {
	case n == 0:
		return api.Invalid(api.FieldError{Field: "reason", Message: "is required"})
	case n > 1000:
		return api.Invalid(api.FieldError{Field: "reason", Message: "must be at most 1000 characters"})
	}
	snd, err := h.store.RejectSenderID(ctx, id, reason, func(snd persistence.SenderID) persistence.NewNotification {
		return persistence.NewNotification{Type: "sender_id_rejected", Title: "Sender ID " + snd.Name + " rejected",
			Message: fmt.Sprintf("Your sender ID %s was rejected: %s. Correct the documents and re-apply; the fee is not charged again.",
				snd.Name, reason)}
	})
	if err != nil {
		return err
	}
	if err := h.engine.AccountChanged(ctx, snd.AccountID); err != nil { // it may have been the default
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, adminSenderJSON{senderJSON: newSenderJSON(snd), AccountID: snd.AccountID})
}

func networkLabel(n string) string {
	if n == "all" {
		return "every network"
	}
	return strings.ToUpper(n[:1]) + n[1:]
}
