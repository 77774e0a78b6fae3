// Package campaigns is the campaign endpoints: a message to a contact group, personalised
// with merge tags, now or scheduled; and the reports of spend and of how campaigns and the
// groups they went to performed.
package campaigns

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// Store is what the campaign and report endpoints read from the store.
type Store interface {
	ApprovedSender(ctx context.Context, accountID uuid.UUID, idOrName string) (persistence.Sender, error)
	Audience(ctx context.Context, accountID, groupID uuid.UUID) (string, []persistence.AudienceContact, error)
	Campaigns(ctx context.Context, accountID uuid.UUID, p persistence.Page) ([]persistence.Campaign, error)
	ListContacts(ctx context.Context, accountID uuid.UUID, f persistence.ContactFilter, p persistence.Page) ([]persistence.Contact, int64, error)
	Campaign(ctx context.Context, accountID, id uuid.UUID) (persistence.Campaign, error)
	SpendTrend(ctx context.Context, accountID uuid.UUID, now time.Time, days int) ([]persistence.SpendDay, error)
	GroupResults(ctx context.Context, accountID uuid.UUID) ([]persistence.GroupResult, error)
}

// Engine is the actor engine, which creates and cancels campaigns.
type Engine interface {
	CreateCampaign(ctx context.Context, req actors.CampaignRequest) (actors.SendResult, error)
	CancelCampaign(ctx context.Context, accountID, campaignID uuid.UUID) error
	Quote(ctx context.Context, req actors.SendRequest) (actors.Quote, error) // a preview's lines
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Store  Store
	Engine Engine
	Keys   *api.Keys // a campaign is created once per Idempotency-Key
	Lists  api.Lists
	Plan   *carriers.Plan // the audience's numbering
	Now    func() time.Time
}

// Handler serves the endpoints.
type Handler struct {
	store  Store
	engine Engine
	keys   *api.Keys
	lists  api.Lists
	plan   *carriers.Plan
	now    func() time.Time
}

// New returns the endpoints.
func New(d Deps) *Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Handler{store: d.Store, engine: d.Engine, keys: d.Keys, lists: d.Lists, plan: d.Plan, now: d.Now}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/campaigns", api.Account, h.listCampaigns)
	r.Handle("POST", "/campaigns", api.Account, h.createCampaign)
	r.Handle("GET", "/campaigns/{id}", api.Account, h.getCampaign)
	r.Handle("GET", "/campaigns/{id}/report", api.Account, h.campaignReport)
	r.Handle("POST", "/campaigns/{id}/cancel", api.Account, h.cancelCampaign)
	r.Handle("GET", "/reports/spend-trend", api.Account, h.spendTrend)
	r.Handle("GET", "/reports/campaign-performance", api.Account, h.campaignPerformance)
	r.Handle("GET", "/reports/group-performance", api.Account, h.groupPerformance)
}

// Limits of a campaign's fields.
const (
	maxCampaignName = 100 // the schema's CHECK
	maxMessageRunes = 918 // as a send's: the template's characters, before merge tags and any prefix
)

type campaignJSON struct {
	ID              uuid.UUID      `json:"id"`
	Name            string         `json:"name"`
	Message         string         `json:"message"`
	GroupID         uuid.UUID      `json:"group_id"`
	GroupName       string         `json:"group_name"`
	SenderID        *uuid.UUID     `json:"sender_id"`
	Status          string         `json:"status"`
	ScheduledAt     *api.Timestamp `json:"scheduled_at"`
	TotalRecipients int            `json:"total_recipients"`
	SuppressedCount int            `json:"suppressed_count"` // group members left out: on the suppression list
	TotalDelivered  int            `json:"total_delivered"`
	TotalFailed     int            `json:"total_failed"`
	CostKES         api.KES        `json:"cost_kes"`
	DeliveryRate    float64        `json:"delivery_rate"`
	CreatedAt       api.Timestamp  `json:"created_at"`
	StartedAt       *api.Timestamp `json:"started_at"`
	CompletedAt     *api.Timestamp `json:"completed_at"`
	Reference       *string        `json:"reference"` // the caller's correlation id, on every message too
	Category        string         `json:"category"`  // transactional | promotional
}

// DeliveryRate is delivered ÷ recipients × 100, to one decimal (CONTRACT §7).
func DeliveryRate(delivered, total int) float64 {
	if total <= 0 {
		return 0
	}
	return math.Round(float64(delivered)*1000/float64(total)) / 10
}

func newCampaignJSON(c persistence.Campaign) campaignJSON {
	return campaignJSON{ID: c.ID, Name: c.Name, Message: c.Message, GroupID: c.GroupID, GroupName: c.GroupName,
		SenderID: c.SenderID, Status: string(c.Status), ScheduledAt: api.TimestampOf(c.ScheduledAt),
		TotalRecipients: c.TotalRecipients, SuppressedCount: c.Suppressed, TotalDelivered: c.Delivered, TotalFailed: c.Failed,
		CostKES: api.KES(c.CostCents), DeliveryRate: DeliveryRate(c.Delivered, c.TotalRecipients),
		CreatedAt: api.Timestamp(c.CreatedAt), StartedAt: api.TimestampOf(c.StartedAt), CompletedAt: api.TimestampOf(c.CompletedAt),
		Reference: c.Reference, Category: api.CategoryOf(c.Promotional)}
}

func (h *Handler) createCampaign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	p := api.Principal(rc)
	return h.keys.Run(ctx, rc, api.Op{Scope: p.AccountID, FromResource: h.replayCampaign},
		func(key *persistence.IdempotencyKey) error {
			in, err := h.parseCampaign(rc)
			if err != nil {
				return err
			}
			id, err := h.createCampaignOnce(ctx, p.AccountID, in, key, string(p.Source))
			if err != nil {
				return err
			}
			c, err := h.store.Campaign(ctx, p.AccountID, id)
			if err != nil {
				return err
			}
			// The answer is the campaign as created (queued, or scheduled): its job may have
			// started in the moments since, which GET /campaigns/{id} shows.
			if c.Status == persistence.CampaignSending {
				c.Status, c.StartedAt, c.Delivered, c.Failed = persistence.CampaignQueued, nil, 0, 0
			}
			return api.WriteJSON(rc, http.StatusCreated, newCampaignJSON(c))
		})
}

func (h *Handler) replayCampaign(ctx context.Context, accountID, id uuid.UUID) (any, error) {
	c, err := h.store.Campaign(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	return newCampaignJSON(c), nil
}

// createCampaignOnce creates a campaign whose messages' source is source: the creating call's
// (api with an API key, browser with a bearer token or the dashboard's session; CONTRACT §1).
func (h *Handler) createCampaignOnce(ctx context.Context, accountID uuid.UUID, in campaignInput, key *persistence.IdempotencyKey,
	source string) (uuid.UUID, error) {
	req := actors.CampaignRequest{AccountID: accountID, Idempotency: key, Reference: in.reference, Campaign: persistence.NewCampaign{
		ID: persistence.NewID(), Name: in.name, Template: in.message, GroupID: in.groupID, ScheduledAt: in.scheduledAt},
		Promotional: in.promotional, Source: source}
	if in.senderID != "" {
		snd, err := h.approvedSender(ctx, accountID, in.senderID)
		if err != nil {
			return uuid.Nil, err
		}
		req.Sender, req.Campaign.SenderID = &snd, &snd.ID
	}
	name, contacts, err := h.store.Audience(ctx, accountID, in.groupID)
	if errors.Is(err, persistence.ErrNotFound) {
		return uuid.Nil, api.NotFound("no such group")
	}
	if err != nil {
		return uuid.Nil, err
	}
	req.Campaign.GroupName = name
	req.Audience = make([]persistence.Member, 0, len(contacts))
	for _, c := range contacts {
		// A contact on a range no network serves cannot be sent to, so it is not a recipient.
		nsn, network, err := h.plan.Parse([]byte(c.Phone))
		if err != nil {
			continue
		}
		req.Audience = append(req.Audience, persistence.Member{Recipient: persistence.Recipient{NSN: nsn, Network: network},
			FirstName: c.FirstName, LastName: c.LastName})
	}
	if len(req.Audience) == 0 {
		return uuid.Nil, api.NewProblem("group_empty", "the group has no active contacts on a Kenyan network: add or import some first")
	}
	if _, err := h.engine.CreateCampaign(ctx, req); err != nil {
		return uuid.Nil, err
	}
	return req.Campaign.ID, nil
}

// approvedSender is the account's approved, active sender ID by id or name; any other is a 422
// sender_not_approved naming sender_id.
func (h *Handler) approvedSender(ctx context.Context, accountID uuid.UUID, idOrName string) (persistence.Sender, error) {
	snd, err := h.store.ApprovedSender(ctx, accountID, idOrName)
	if errors.Is(err, persistence.ErrNotFound) {
		return snd, api.InvalidAs("sender_not_approved",
			api.FieldError{Field: "sender_id", Message: "is not an approved, active sender ID of this account"})
	}
	return snd, err
}

// listCampaigns answers the contract's plain array, newest first: all of them, or, beyond the
// spec, page_size of them from an optional cursor, with the next page's cursor in the
// X-Next-Cursor and Link headers, so a client can page a list that grows while it reads.
func (h *Handler) listCampaigns(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	acct := api.Principal(rc).AccountID
	l := h.lists.Of(api.CampaignList, acct)
	var p persistence.Page // all of them
	if q.Text("page_size") != "" || q.Text("cursor") != "" {
		if q.Text("page") != "" {
			q.Malformed("page", "campaigns page by cursor: page_size, then the cursor each page returns")
		}
		p = q.Page(l)
	}
	if err := q.Err(); err != nil {
		return err
	}
	list, err := h.store.Campaigns(ctx, acct, p)
	if err != nil {
		return err
	}
	out := make([]campaignJSON, len(list))
	for i, c := range list {
		out[i] = newCampaignJSON(c)
	}
	if p.Size > 0 && len(list) == p.Size {
		next := l.Cursor(list[len(list)-1].ID)
		rc.Response.Header.Set("X-Next-Cursor", next)
		rc.Response.Header.Set("Link", fmt.Sprintf(`</campaigns?page_size=%d&cursor=%s>; rel="next"`, p.Size, next))
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}

// pathCampaign is the caller's campaign named by the path (another account's is a 404).
func (h *Handler) pathCampaign(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.Campaign, error) {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return persistence.Campaign{}, err
	}
	return h.store.Campaign(ctx, api.Principal(rc).AccountID, id)
}

func (h *Handler) getCampaign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := h.pathCampaign(ctx, rc)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newCampaignJSON(c))
}

type campaignReportJSON struct {
	Campaign campaignJSON `json:"campaign"`
	Stats    struct {
		TotalRecipients int     `json:"total_recipients"`
		Delivered       int     `json:"delivered"`
		Failed          int     `json:"failed"`
		Pending         int     `json:"pending"`
		DeliveryRate    float64 `json:"delivery_rate"`
	} `json:"stats"`
	CostKES     api.KES        `json:"cost_kes"`
	RefundedKES api.KES        `json:"refunded_kes"`
	StartedAt   *api.Timestamp `json:"started_at"`
	CompletedAt *api.Timestamp `json:"completed_at"`
}

func (h *Handler) campaignReport(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := h.pathCampaign(ctx, rc)
	if err != nil {
		return err
	}
	rep := NewReport(c)
	r := campaignReportJSON{Campaign: newCampaignJSON(c), CostKES: api.KES(c.CostCents), RefundedKES: api.KES(c.RefundedCents),
		StartedAt: api.TimestampOf(c.StartedAt), CompletedAt: api.TimestampOf(c.CompletedAt)}
	r.Stats.TotalRecipients, r.Stats.Delivered, r.Stats.Failed = c.TotalRecipients, c.Delivered, c.Failed
	r.Stats.Pending, r.Stats.DeliveryRate = rep.Pending, rep.DeliveryRate
	return api.WriteJSON(rc, http.StatusOK, r)
}

// cancelCampaign stops a queued, scheduled or sending campaign; what was not sent is
// refunded (at once when nothing was, else as soon as the messages in flight are settled).
func (h *Handler) cancelCampaign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	c, err := h.Cancel(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newCampaignJSON(c))
}
