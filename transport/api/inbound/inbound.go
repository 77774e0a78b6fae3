// Package inbound is two-way messaging over the API (CONTRACT §15): the short codes and long
// numbers operators give accounts, the messages subscribers send to them (the simulator's
// POST /admin/sim/inbound, and SMPP deliver_sm through ReceiveFrom) and each account's inbox. A message
// that begins with STOP (or a synonym) suppresses its sender for the account, START lifts
// that; the tenant actor holds the list in memory, so every such change is handed to it
// before the message is answered.
//
// A keyword is answered with a free confirmation SMS from the account's own sender, at most
// one of each kind per number a day (CONTRACT §15). The store writes it as an open job in the
// transaction that stores the message; Receive then hands it to the account's tenant to send,
// and a job that hand-off never reached (the node stopped) is resumed when the node starts.
package inbound

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// Store is what the endpoints need from the store.
type Store interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	AssignInboundNumber(ctx context.Context, accountID uuid.UUID, number string, network carriers.Network) (persistence.InboundNumber, bool, error)
	ReceiveInbound(ctx context.Context, in persistence.NewInbound) (persistence.InboundResult, error)
	SettleInbound(ctx context.Context, id uuid.UUID) error
	InboundMessages(ctx context.Context, accountID uuid.UUID, f persistence.InboundFilter, limit int) ([]persistence.InboundMessage, error)
}

// Tenants is the engine's side: the account's tenant actor keeps the suppression list in
// memory, so a change it has not taken could let a send through to a number that sent STOP.
type Tenants interface {
	// SuppressionChanged answers once the account's tenant holds the change.
	SuppressionChanged(ctx context.Context, accountID uuid.UUID, nsn uint32, suppressed bool) error
	// StartJob hands the account's tenant a job the store opened (a keyword's confirmation)
	// to dispatch.
	StartJob(accountID, jobID uuid.UUID)
}

// Options configure the endpoints.
type Options struct {
	// Simulated: the node runs on simulated networks, and POST /admin/sim/inbound stands in
	// for their deliver_sm (404 otherwise).
	Simulated bool
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Store   Store
	Tenants Tenants
	Lists   api.Lists
	Plan    *carriers.Plan // nil: the embedded Kenyan plan
}

// Handler serves the endpoints.
type Handler struct {
	opts    Options
	store   Store
	tenants Tenants
	lists   api.Lists
	plan    *carriers.Plan
}

// New returns the endpoints.
func New(opts Options, d Deps) *Handler {
	if d.Plan == nil {
		d.Plan = carriers.DefaultPlan()
	}
	return &Handler{opts: opts, store: d.Store, tenants: d.Tenants, lists: d.Lists, plan: d.Plan}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/sms/inbound", api.Account, h.list)
	r.Handle("POST", "/admin/accounts/{id}/inbound-numbers", api.Operator, h.assign)
	r.HandleIf(h.opts.Simulated, "POST", "/admin/sim/inbound", api.Operator, h.simulate)
}

// maxSimText is the most characters a simulated message may have: a long concatenated SMS
// is about 1,000 (6 parts of 153 GSM characters).
const maxSimText = 1000

const (
	phoneMessage  = "must be a Kenyan mobile number such as 0712345678 or +254712345678"
	numberMessage = "must be a short code (3 to 8 digits) or a Kenyan long number such as 0712345678 or +254712345678"
)

// parsePhone reads a Kenyan mobile number in any accepted form, of a network Tuma reaches or
// not (NetworkUnknown then).
func (h *Handler) parsePhone(raw string) (uint32, carriers.Network, bool) {
	nsn, n, err := h.plan.Parse([]byte(raw))
	if err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
		return 0, carriers.NetworkUnknown, false
	}
	return nsn, n, true
}

// parseNumber reads an inbound number: a short code's digits, or a long number as E.164.
func (h *Handler) parseNumber(raw string) (string, bool) {
	s := strings.TrimSpace(raw)
	if len(s) >= 3 && len(s) <= 8 && strings.Trim(s, "0123456789") == "" {
		return s, true
	}
	nsn, _, ok := h.parsePhone(s)
	if !ok {
		return "", false
	}
	return persistence.Recipient{NSN: nsn}.E164(), true
}

type numberJSON struct {
	Number    string        `json:"number"`
	Network   string        `json:"network"`
	AccountID uuid.UUID     `json:"account_id"`
	CreatedAt api.Timestamp `json:"created_at"`
}

// NumberInput is the body of POST /admin/accounts/{id}/inbound-numbers.
type NumberInput struct {
	Number  *string `json:"number"`
	Network *string `json:"network"`
}

func (h *Handler) assign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	var in NumberInput
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	var fe api.FieldErrors
	var number string
	switch {
	case in.Number == nil || strings.TrimSpace(*in.Number) == "":
		fe.Add("number", "is required")
	default:
		n, ok := h.parseNumber(*in.Number)
		if !ok {
			fe.Add("number", numberMessage)
		}
		number = n
	}
	network := carriers.NetworkUnknown
	switch {
	case in.Network == nil || *in.Network == "":
		fe.Add("network", "is required")
	default:
		n, ok := carriers.ParseNetwork(*in.Network)
		if !ok {
			fe.Add("network", "must be one of safaricom, airtel, telkom")
		}
		network = n
	}
	if err := fe.Err(); err != nil {
		return err
	}
	if _, err := h.store.AccountByID(ctx, id); err != nil {
		return err
	}
	n, added, err := h.store.AssignInboundNumber(ctx, id, number, network)
	if errors.Is(err, persistence.ErrInboundNumberTaken) {
		return api.NewProblem("inbound_number_taken", "the number "+number+" belongs to another account")
	}
	if err != nil {
		return err
	}
	status := http.StatusOK // the account's already: as it was
	if added {
		status = http.StatusCreated
	}
	return api.WriteJSON(rc, status, numberJSON{Number: n.Number, Network: n.Network.String(), AccountID: n.AccountID,
		CreatedAt: api.Timestamp(n.CreatedAt)})
}

// messageJSON is an inbound message as a tenant sees it.
type messageJSON struct {
	ID         uuid.UUID     `json:"id"`
	From       string        `json:"from"`
	To         string        `json:"to"`
	Network    string        `json:"network"`
	Text       string        `json:"text"`
	ReceivedAt api.Timestamp `json:"received_at"`
	Keyword    *string       `json:"keyword"`
}

func newMessageJSON(m persistence.InboundMessage) messageJSON {
	out := messageJSON{ID: m.ID, From: m.FromE164(), To: m.To, Network: m.Network.String(), Text: m.Text,
		ReceivedAt: api.Timestamp(m.ReceivedAt)}
	if m.Keyword != "" {
		out.Keyword = &m.Keyword
	}
	return out
}

// Receive stores a message sent to an inbound number and acts on its keyword; a suppression
// it adds or lifts is handed to the account's tenant before Receive returns, and so is the
// keyword's confirmation, to send. It fails only when the store or the tenant does: any text
// is taken as it came. A message stored by a delivery that failed is finished, not stored
// again, when the network delivers it again.
func (h *Handler) Receive(ctx context.Context, in persistence.NewInbound) (persistence.InboundResult, error) {
	r, err := h.store.ReceiveInbound(ctx, in)
	if err != nil {
		return r, err
	}
	acct := r.Message.AccountID
	if acct != nil && r.ReplyJobID != uuid.Nil {
		// Before telling the tenant of the suppression, which can fail: the message's retry
		// writes no second confirmation today, so this one would wait for the node's restart.
		h.tenants.StartJob(*acct, r.ReplyJobID)
	}
	switch {
	case acct == nil:
	case r.Suppressed:
		// Told even when it was on the list already: a first message that stored it and then
		// failed to reach the tenant may be delivered again.
		if err := h.tenants.SuppressionChanged(ctx, *acct, in.From, true); err != nil {
			return r, fmt.Errorf("tell the tenant of a keyword suppression: %w", err)
		}
	case r.Lifted:
		// Only when one was lifted: a START over the account's own suppression changes nothing.
		if err := h.tenants.SuppressionChanged(ctx, *acct, in.From, false); err != nil {
			return r, fmt.Errorf("tell the tenant of a lifted suppression: %w", err)
		}
	}
	// Until now a failure is answered as one, and the network's redelivery finishes this
	// message rather than storing another.
	if err := h.store.SettleInbound(ctx, r.Message.ID); err != nil {
		return r, err
	}
	return r, nil
}

// ErrUnreadableAddress is a network's message whose sender is no Kenyan mobile number or
// whose destination no short code or long number: it can never be stored.
var ErrUnreadableAddress = errors.New("inbound: unreadable address")

// ReceiveFrom is Receive for a message a network delivered (an SMPP deliver_sm), with its
// addresses as the network wrote them: the sender a mobile number in any accepted form
// (254712345678, 0712345678), the destination a short code or long number. network is the
// one that delivered it, which a ported number's prefix may not tell.
func (h *Handler) ReceiveFrom(ctx context.Context, from, to string, network carriers.Network, text string) (persistence.InboundResult, error) {
	nsn, _, ok := h.parsePhone(from)
	if !ok {
		return persistence.InboundResult{}, fmt.Errorf("sender %q: %w", from, ErrUnreadableAddress)
	}
	number, ok := h.parseNumber(to)
	if !ok {
		return persistence.InboundResult{}, fmt.Errorf("destination %q: %w", to, ErrUnreadableAddress)
	}
	return h.Receive(ctx, persistence.NewInbound{From: nsn, To: number, Network: network, Text: text})
}

// SimInput is the body of POST /admin/sim/inbound.
type SimInput struct {
	From    *string `json:"from"`
	To      *string `json:"to"`
	Text    *string `json:"text"`
	Network *string `json:"network"`
}

func (h *Handler) simulate(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in SimInput
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	var fe api.FieldErrors
	var mo persistence.NewInbound
	switch {
	case in.From == nil || strings.TrimSpace(*in.From) == "":
		fe.Add("from", "is required")
	default:
		nsn, n, ok := h.parsePhone(*in.From)
		if !ok {
			fe.Add("from", phoneMessage)
		}
		mo.From, mo.Network = nsn, n
	}
	switch {
	case in.To == nil || strings.TrimSpace(*in.To) == "":
		fe.Add("to", "is required")
	default:
		to, ok := h.parseNumber(*in.To)
		if !ok {
			fe.Add("to", numberMessage)
		}
		mo.To = to
	}
	if in.Text != nil {
		mo.Text = *in.Text // as sent: an empty or odd text is a message all the same
		if utf8.RuneCountInString(mo.Text) > maxSimText {
			fe.Add("text", fmt.Sprintf("must be at most %d characters", maxSimText))
		}
	}
	switch {
	case in.Network != nil && *in.Network != "":
		n, ok := carriers.ParseNetwork(*in.Network)
		if !ok {
			fe.Add("network", "must be one of safaricom, airtel, telkom")
		}
		mo.Network = n
	case mo.From != 0 && mo.Network == carriers.NetworkUnknown:
		fe.Add("network", "is required: the sender's number is of no network Tuma reaches")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	r, err := h.Receive(ctx, mo)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, struct {
		messageJSON
		AccountID *uuid.UUID `json:"account_id"`
	}{newMessageJSON(r.Message), r.Message.AccountID})
}

// Listing is one page of an account's inbox, as GET /sms/inbound reads its query.
type Listing struct {
	Messages   []persistence.InboundMessage
	NextCursor *string // the next page's cursor; nil at the end of the inbox
}

// Inbox reads a page of the account's inbound messages, newest first, as GET /sms/inbound
// asks for it (from, page_size, cursor): a sender that is no Kenyan mobile number is a 422
// naming from, a cursor not this list's a 400. Unrouted messages are no account's.
func (h *Handler) Inbox(ctx context.Context, rc *fasthttp.RequestCtx) (Listing, error) {
	acct := api.Principal(rc).AccountID
	q := api.NewQuery(rc)
	var f persistence.InboundFilter
	if s := strings.TrimSpace(q.Text("from")); s != "" {
		nsn, _, ok := h.parsePhone(s)
		if !ok {
			q.Invalid("from", phoneMessage)
		}
		f.From = nsn
	}
	if q.Text("page") != "" {
		q.Malformed("page", "the inbox pages by cursor: page_size, then the next_cursor each page returns")
	}
	l := h.lists.Of(api.InboundList, acct, fmt.Sprintf("from=%d", f.From))
	p := q.Page(l)
	if err := q.Err(); err != nil {
		return Listing{}, err
	}
	f.After = p.After
	list, err := h.store.InboundMessages(ctx, acct, f, p.Size)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Messages: list}
	if len(list) == p.Size {
		c := l.Cursor(list[len(list)-1].ID)
		out.NextCursor = &c
	}
	return out, nil
}

func (h *Handler) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	l, err := h.Inbox(ctx, rc)
	if err != nil {
		return err
	}
	out := struct {
		Data       []messageJSON `json:"data"`
		NextCursor *string       `json:"next_cursor"`
	}{Data: make([]messageJSON, len(l.Messages)), NextCursor: l.NextCursor}
	for i, m := range l.Messages {
		out.Data[i] = newMessageJSON(m)
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}
