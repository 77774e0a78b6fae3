// Package smpp is the SMPP credentials of the API (issue 36): the system_id and password an
// account's ESMEs bind to Tuma's SMPP server with, the addresses they may bind from and how
// many binds they may hold. Tuma makes every password and shows it only when it is made, at
// creation and on rotation; the store keeps a bcrypt hash.
package smpp

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Store is what the endpoints need from the store.
type Store interface {
	CreateSMPPCredential(ctx context.Context, n persistence.NewSMPPCredential) (persistence.SMPPCredential, error)
	SMPPCredentials(ctx context.Context, accountID uuid.UUID) ([]persistence.SMPPCredential, error)
	SMPPCredentialByID(ctx context.Context, accountID, id uuid.UUID) (persistence.SMPPCredential, error)
	UpdateSMPPCredential(ctx context.Context, accountID, id uuid.UUID, p persistence.SMPPCredentialPatch) (persistence.SMPPCredential, error)
	SetSMPPPassword(ctx context.Context, accountID, id uuid.UUID, hash string) (persistence.SMPPCredential, error)
	DeleteSMPPCredential(ctx context.Context, accountID, id uuid.UUID) error
}

// Passwords hashes a password for the store (auth.Passwords, at auth.SMPPPasswordCost).
type Passwords interface {
	Hash(password string) (string, error)
}

// Options are the endpoints' settings.
type Options struct {
	PerAccount int // most credentials an account may have (TUMA_SMPP_CREDENTIALS_PER_ACCOUNT); 0: no limit
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Store     Store
	Passwords Passwords
	Keys      *api.Keys // the dashboard form's keys (CreateOnce); nil: none
}

// Handler serves the endpoints.
type Handler struct {
	opts      Options
	store     Store
	passwords Passwords
	keys      *api.Keys
}

// New returns the endpoints.
func New(opts Options, d Deps) *Handler {
	return &Handler{opts: opts, store: d.Store, passwords: d.Passwords, keys: d.Keys}
}

// CreateOnce is Create for the dashboard's form, under its key (one per render; "": none): a
// form sent again (a reload of its answer, a double click) makes no second credential, and
// gets the first one, replayed true, without its password (shown once, with the first answer).
func (h *Handler) CreateOnce(ctx context.Context, accountID uuid.UUID, in Input, key string) (c persistence.SMPPCredential, password string, replayed bool, err error) {
	if key == "" || h.keys == nil {
		c, password, err = h.Create(ctx, accountID, in)
		return c, password, false, err
	}
	id, replayed, err := h.keys.CreateOnce(ctx, accountID, "smpp-form:", key, in.fingerprint(), func() (uuid.UUID, error) {
		var err error
		c, password, err = h.Create(ctx, accountID, in)
		return c.ID, err
	})
	if err != nil || !replayed {
		return c, password, replayed, err
	}
	c, err = h.Get(ctx, accountID, id)
	return c, "", true, err
}

// fingerprint tells one create form's input from another's.
func (in Input) fingerprint() []byte {
	h := sha256.New()
	if in.SystemID != nil {
		h.Write([]byte(*in.SystemID))
	}
	h.Write([]byte{0})
	if in.AllowedIPs != nil {
		h.Write([]byte(strings.Join(*in.AllowedIPs, ",")))
	}
	if in.MaxBinds != nil {
		fmt.Fprintf(h, "\x00%d", *in.MaxBinds)
	}
	return h.Sum(nil)
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("POST", "/smpp/credentials", api.Account, h.create)
	r.Handle("GET", "/smpp/credentials", api.Account, api.ListOwned(h.List, newCredentialJSON))
	r.Handle("GET", "/smpp/credentials/{id}", api.Account, api.GetOwned(h.Get, newCredentialJSON))
	r.Handle("PATCH", "/smpp/credentials/{id}", api.Account, api.UpdateOwned(h.Update, newCredentialJSON))
	r.Handle("POST", "/smpp/credentials/{id}/rotate-password", api.Account, h.rotate)
	r.Handle("DELETE", "/smpp/credentials/{id}", api.Account, api.DeleteOwned(h.Delete))
}

type credentialJSON struct {
	ID          uuid.UUID      `json:"id"`
	SystemID    string         `json:"system_id"`
	AllowedIPs  []string       `json:"allowed_ips"`
	MaxBinds    int            `json:"max_binds"`
	Enabled     bool           `json:"enabled"`
	CreatedAt   api.Timestamp  `json:"created_at"`
	LastBoundAt *api.Timestamp `json:"last_bound_at"`
}

func newCredentialJSON(c persistence.SMPPCredential) credentialJSON {
	return credentialJSON{ID: c.ID, SystemID: c.SystemID, AllowedIPs: c.AllowedIPs.Strings(), MaxBinds: c.MaxBinds,
		Enabled: c.Enabled, CreatedAt: api.Timestamp(c.CreatedAt), LastBoundAt: api.TimestampOf(c.LastBoundAt)}
}

// withPassword is a credential with the password just made: the only answers that carry it.
type withPassword struct {
	credentialJSON
	Password string `json:"password"`
}

// Input is a credential's fields as POST and PATCH /smpp/credentials read them (nil: absent).
type Input struct {
	SystemID   *string   `json:"system_id"`   // POST only
	AllowedIPs *[]string `json:"allowed_ips"` // [] (or absent at creation): any address
	MaxBinds   *int      `json:"max_binds"`
	Enabled    *bool     `json:"enabled"`  // PATCH only
	Password   any       `json:"password"` // never: Tuma makes passwords
}

// check validates the fields both operations take and returns the allow-list (nil: absent).
func check(fe *api.FieldErrors, in Input) *persistence.AllowList {
	var ips *persistence.AllowList
	if in.AllowedIPs != nil {
		l, err := persistence.ParseAllowList(*in.AllowedIPs)
		var ae *persistence.AllowListError
		switch {
		case errors.As(err, &ae) && ae.Index >= 0:
			fe.Add(fmt.Sprintf("allowed_ips[%d]", ae.Index), ae.Message)
		case errors.As(err, &ae):
			fe.Add("allowed_ips", ae.Message)
		case err == nil:
			ips = &l
		}
	}
	if in.MaxBinds != nil && (*in.MaxBinds < 1 || *in.MaxBinds > persistence.MaxSMPPBinds) {
		fe.Add("max_binds", fmt.Sprintf("must be an integer from 1 to %d", persistence.MaxSMPPBinds))
	}
	if in.Password != nil {
		fe.Add("password", "is made by Tuma and shown once in the answer; it cannot be chosen")
	}
	return ips
}

// newPassword makes a password and its hash.
func (h *Handler) newPassword() (password, hash string, err error) {
	if password, err = auth.NewSMPPPassword(); err != nil {
		return "", "", err
	}
	hash, err = h.passwords.Hash(password)
	return password, hash, err
}

// Create checks a new credential and stores it for the account; it returns the credential and
// its password, shown only now. Bad fields are a 422 naming each, a system_id taken (in any
// case, by any account) a 409 smpp_system_id_taken, one credential too many a 422
// limit_reached; nothing is stored then.
func (h *Handler) Create(ctx context.Context, accountID uuid.UUID, in Input) (persistence.SMPPCredential, string, error) {
	var fe api.FieldErrors
	if in.SystemID != nil && !persistence.ValidSMPPSystemID(*in.SystemID) {
		fe.Add("system_id", fmt.Sprintf("must be 1 to %d of A-Z, a-z, 0-9, _ and -; leave it out to have one made from the company name",
			persistence.MaxSMPPSystemIDLen))
	}
	ips := check(&fe, in)
	if in.Enabled != nil {
		fe.Add("enabled", "is set by PATCH; a new credential is enabled")
	}
	if err := fe.Err(); err != nil {
		return persistence.SMPPCredential{}, "", err
	}
	n := persistence.NewSMPPCredential{AccountID: accountID, Limit: h.opts.PerAccount}
	if in.SystemID != nil {
		n.SystemID = *in.SystemID
	}
	if ips != nil {
		n.AllowedIPs = *ips
	}
	if in.MaxBinds != nil {
		n.MaxBinds = *in.MaxBinds
	}
	password, hash, err := h.newPassword()
	if err != nil {
		return persistence.SMPPCredential{}, "", err
	}
	n.PasswordHash = hash
	c, err := h.store.CreateSMPPCredential(ctx, n)
	switch {
	case errors.Is(err, persistence.ErrSMPPSystemIDTaken) && n.SystemID == "":
		return c, "", api.NewProblem("smpp_system_id_taken", "no free system_id could be made from the company name; try again, or choose one")
	case errors.Is(err, persistence.ErrSMPPSystemIDTaken):
		return c, "", api.NewProblem("smpp_system_id_taken", fmt.Sprintf("the system_id %q is taken; choose another, or leave it out to have one made", n.SystemID))
	case errors.Is(err, persistence.ErrSMPPCredentialLimit):
		return c, "", api.NewProblem("limit_reached", fmt.Sprintf("an account may have at most %d SMPP credentials; delete one first", h.opts.PerAccount))
	case err != nil:
		return c, "", err
	}
	return c, password, nil
}

// List is the account's credentials, oldest first (no passwords).
func (h *Handler) List(ctx context.Context, accountID uuid.UUID) ([]persistence.SMPPCredential, error) {
	return h.store.SMPPCredentials(ctx, accountID)
}

// Get is one of the account's credentials; another account's is persistence.ErrNotFound.
func (h *Handler) Get(ctx context.Context, accountID, id uuid.UUID) (persistence.SMPPCredential, error) {
	return h.store.SMPPCredentialByID(ctx, accountID, id)
}

// Update changes the fields that are set (allowed_ips, max_binds, enabled), checked as Create
// checks them. Binds already made keep going: the SMPP server applies a change at the next bind.
func (h *Handler) Update(ctx context.Context, accountID, id uuid.UUID, in Input) (persistence.SMPPCredential, error) {
	// An unknown id is a 404 before any field is judged.
	if _, err := h.store.SMPPCredentialByID(ctx, accountID, id); err != nil {
		return persistence.SMPPCredential{}, err
	}
	var fe api.FieldErrors
	if in.SystemID != nil {
		fe.Add("system_id", "cannot be changed; create another credential")
	}
	ips := check(&fe, in)
	if err := fe.Err(); err != nil {
		return persistence.SMPPCredential{}, err
	}
	return h.store.UpdateSMPPCredential(ctx, accountID, id, persistence.SMPPCredentialPatch{AllowedIPs: ips, MaxBinds: in.MaxBinds, Enabled: in.Enabled})
}

// RotatePassword gives a credential a new password, returned only now; the old one binds no more.
func (h *Handler) RotatePassword(ctx context.Context, accountID, id uuid.UUID) (persistence.SMPPCredential, string, error) {
	// Another account's id is a 404 before any hashing is paid for.
	if _, err := h.store.SMPPCredentialByID(ctx, accountID, id); err != nil {
		return persistence.SMPPCredential{}, "", err
	}
	password, hash, err := h.newPassword()
	if err != nil {
		return persistence.SMPPCredential{}, "", err
	}
	c, err := h.store.SetSMPPPassword(ctx, accountID, id, hash)
	if err != nil {
		return c, "", err
	}
	return c, password, nil
}

// Delete removes a credential: it binds no more, and its system_id is free again.
func (h *Handler) Delete(ctx context.Context, accountID, id uuid.UUID) error {
	return h.store.DeleteSMPPCredential(ctx, accountID, id)
}

func (h *Handler) create(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in Input
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	c, password, err := h.Create(ctx, api.Principal(rc).AccountID, in)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, withPassword{newCredentialJSON(c), password})
}

func (h *Handler) rotate(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	c, password, err := h.RotatePassword(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, withPassword{newCredentialJSON(c), password})
}
