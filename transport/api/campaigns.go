// Campaigns: a message to a contact group, personalised with merge tags, now or scheduled.

package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
)

// Campaigns is what the campaign endpoints read from the store.
type Campaigns interface {
	Audience(ctx context.Context, accountID, groupID uuid.UUID) (string, []persistence.AudienceContact, error)
	Campaigns(ctx context.Context, accountID uuid.UUID, p persistence.Page) ([]persistence.Campaign, error)
	Campaign(ctx context.Context, accountID, id uuid.UUID) (persistence.Campaign, error)
}

// maxCampaignName bounds a campaign's name (the schema's CHECK).
const maxCampaignName = 100

type campaignJSON struct {
	ID              uuid.UUID  `json:"id"`
	Name            string     `json:"name"`
	Message         string     `json:"message"`
	GroupID         uuid.UUID  `json:"group_id"`
	GroupName       string     `json:"group_name"`
	SenderID        *uuid.UUID `json:"sender_id"`
	Status          string     `json:"status"`
	ScheduledAt     *timestamp `json:"scheduled_at"`
	TotalRecipients int        `json:"total_recipients"`
	TotalDelivered  int        `json:"total_delivered"`
	TotalFailed     int        `json:"total_failed"`
	CostKES         kes        `json:"cost_kes"`
	DeliveryRate    float64    `json:"delivery_rate"`
	CreatedAt       timestamp  `json:"created_at"`
	StartedAt       *timestamp `json:"started_at"`
	CompletedAt     *timestamp `json:"completed_at"`
}

// deliveryRate is delivered ÷ recipients × 100, to one decimal (CONTRACT §7).
func deliveryRate(delivered, total int) float64 {
	if total <= 0 {
		return 0
	}
	return math.Round(float64(delivered)*1000/float64(total)) / 10
}

func newCampaignJSON(c persistence.Campaign) campaignJSON {
	return campaignJSON{ID: c.ID, Name: c.Name, Message: c.Message, GroupID: c.GroupID, GroupName: c.GroupName,
		SenderID: c.SenderID, Status: string(c.Status), ScheduledAt: optTime(c.ScheduledAt),
		TotalRecipients: c.TotalRecipients, TotalDelivered: c.Delivered, TotalFailed: c.Failed,
		CostKES: kes(c.CostCents), DeliveryRate: deliveryRate(c.Delivered, c.TotalRecipients),
		CreatedAt: timestamp(c.CreatedAt), StartedAt: optTime(c.StartedAt), CompletedAt: optTime(c.CompletedAt)}
}

// campaignInput is POST /campaigns's body, checked.
type campaignInput struct {
	name, message string
	groupID       uuid.UUID
	senderID      string
	scheduledAt   *time.Time
}

func (s *Server) parseCampaign(rc *fasthttp.RequestCtx) (campaignInput, error) {
	var in struct {
		Name        *string `json:"name"`
		Message     *string `json:"message"`
		GroupID     *string `json:"group_id"`
		SenderID    *string `json:"sender_id"`
		ScheduledAt *string `json:"scheduled_at"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return campaignInput{}, err
	}
	var out campaignInput
	var fe fieldErrors
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		fe.add("name", "is required")
	} else if out.name = strings.TrimSpace(*in.Name); utf8.RuneCountInString(out.name) > maxCampaignName {
		fe.add("name", "must be at most 100 characters")
	}
	switch {
	case in.Message == nil || strings.TrimSpace(*in.Message) == "":
		fe.add("message", "is required")
	case utf8.RuneCountInString(*in.Message) > maxMessageRunes:
		fe.add("message", "must be at most 918 characters")
	case strings.TrimSpace(actors.RenderMergeTags(*in.Message, "", "")) == "":
		fe.add("message", "must have text besides its merge tags")
	default:
		out.message = *in.Message
	}
	if in.GroupID == nil {
		fe.add("group_id", "is required")
	} else if id, err := uuid.Parse(*in.GroupID); err != nil {
		fe.add("group_id", "must be the id of one of your groups")
	} else {
		out.groupID = id
	}
	if in.SenderID != nil {
		out.senderID = strings.TrimSpace(*in.SenderID)
	}
	if in.ScheduledAt != nil {
		if at, err := time.Parse(time.RFC3339, *in.ScheduledAt); err != nil {
			fe.add("scheduled_at", "must be an RFC 3339 date and time, e.g. 2026-12-01T09:00:00Z")
		} else if !at.After(s.Now()) {
			fe.add("scheduled_at", "must be in the future")
		} else {
			at = at.UTC()
			out.scheduledAt = &at
		}
	}
	return out, fe.err()
}

func (s *Server) createCampaign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	p := principal(rc)
	return s.idempotent(ctx, rc, idempotentOp{scope: p.AccountID, fromResource: s.replayCampaign},
		func(key *persistence.IdempotencyKey) error {
			id, err := s.createCampaignOnce(ctx, rc, p.AccountID, key)
			if err != nil {
				return err
			}
			c, err := s.Campaigns.Campaign(ctx, p.AccountID, id)
			if err != nil {
				return err
			}
			return writeJSON(rc, http.StatusCreated, newCampaignJSON(c))
		})
}

func (s *Server) replayCampaign(ctx context.Context, accountID, id uuid.UUID) (any, error) {
	c, err := s.Campaigns.Campaign(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	return newCampaignJSON(c), nil
}

func (s *Server) createCampaignOnce(ctx context.Context, rc *fasthttp.RequestCtx, accountID uuid.UUID, key *persistence.IdempotencyKey) (uuid.UUID, error) {
	in, err := s.parseCampaign(rc)
	if err != nil {
		return uuid.Nil, err
	}
	req := actors.CampaignRequest{AccountID: accountID, Idempotency: key, Campaign: persistence.NewCampaign{
		ID: persistence.NewID(), Name: in.name, Template: in.message, GroupID: in.groupID, ScheduledAt: in.scheduledAt}}
	if in.senderID != "" {
		snd, err := s.Queries.ApprovedSender(ctx, accountID, in.senderID)
		if errors.Is(err, persistence.ErrNotFound) {
			return uuid.Nil, invalidAs("sender_not_approved",
				FieldError{Field: "sender_id", Message: "is not an approved, active sender ID of this account"})
		}
		if err != nil {
			return uuid.Nil, err
		}
		req.Sender, req.Campaign.SenderID = &snd, &snd.ID
	}
	name, contacts, err := s.Campaigns.Audience(ctx, accountID, in.groupID)
	if errors.Is(err, persistence.ErrNotFound) {
		return uuid.Nil, notFound("no such group")
	}
	if err != nil {
		return uuid.Nil, err
	}
	req.Campaign.GroupName = name
	req.Audience = make([]persistence.Member, 0, len(contacts))
	for _, c := range contacts {
		// A contact on a range no network serves cannot be sent to, so it is not a recipient.
		nsn, network, err := s.Plan.Parse([]byte(c.Phone))
		if err != nil {
			continue
		}
		req.Audience = append(req.Audience, persistence.Member{Recipient: persistence.Recipient{NSN: nsn, Network: network},
			FirstName: c.FirstName, LastName: c.LastName})
	}
	if len(req.Audience) == 0 {
		return uuid.Nil, problem("group_empty", "the group has no active contacts on a Kenyan network: add or import some first")
	}
	if _, err := s.Engine.CreateCampaign(ctx, req); err != nil {
		return uuid.Nil, err
	}
	return req.Campaign.ID, nil
}

// listCampaigns answers the contract's plain array, newest first: all of them, or, beyond the
// spec, page_size of them from an optional cursor, with the next page's cursor in the
// X-Next-Cursor and Link headers, so a client can page a list that grows while it reads.
func (s *Server) listCampaigns(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	acct := principal(rc).AccountID
	l := s.list(listCampaigns, acct)
	var p persistence.Page // all of them
	if q.raw("page_size") != "" || q.raw("cursor") != "" {
		if q.raw("page") != "" {
			q.malformed.add("page", "campaigns page by cursor: page_size, then the cursor each page returns")
		}
		p = q.Page(l)
	}
	if err := q.err(); err != nil {
		return err
	}
	list, err := s.Campaigns.Campaigns(ctx, acct, p)
	if err != nil {
		return err
	}
	out := make([]campaignJSON, len(list))
	for i, c := range list {
		out[i] = newCampaignJSON(c)
	}
	if p.Size > 0 && len(list) == p.Size {
		next := l.codec.encode(l, list[len(list)-1].ID)
		rc.Response.Header.Set("X-Next-Cursor", next)
		rc.Response.Header.Set("Link", fmt.Sprintf(`</campaigns?page_size=%d&cursor=%s>; rel="next"`, p.Size, next))
	}
	return writeJSON(rc, http.StatusOK, out)
}

// pathCampaign is the caller's campaign named by the path (another account's is a 404).
func (s *Server) pathCampaign(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.Campaign, error) {
	id, err := pathID(rc, "id")
	if err != nil {
		return persistence.Campaign{}, err
	}
	return s.Campaigns.Campaign(ctx, principal(rc).AccountID, id)
}

func (s *Server) getCampaign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := s.pathCampaign(ctx, rc)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newCampaignJSON(c))
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
	CostKES     kes        `json:"cost_kes"`
	RefundedKES kes        `json:"refunded_kes"`
	StartedAt   *timestamp `json:"started_at"`
	CompletedAt *timestamp `json:"completed_at"`
}

func (s *Server) campaignReport(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := s.pathCampaign(ctx, rc)
	if err != nil {
		return err
	}
	r := campaignReportJSON{Campaign: newCampaignJSON(c), CostKES: kes(c.CostCents), RefundedKES: kes(c.RefundedCents),
		StartedAt: optTime(c.StartedAt), CompletedAt: optTime(c.CompletedAt)}
	r.Stats.TotalRecipients, r.Stats.Delivered, r.Stats.Failed = c.TotalRecipients, c.Delivered, c.Failed
	r.Stats.Pending = max(c.TotalRecipients-c.Delivered-c.Failed, 0)
	r.Stats.DeliveryRate = deliveryRate(c.Delivered, c.TotalRecipients)
	return writeJSON(rc, http.StatusOK, r)
}

// cancelCampaign stops a queued, scheduled or sending campaign; what was not sent is
// refunded (at once when nothing was, else as soon as the messages in flight are settled).
func (s *Server) cancelCampaign(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	if err := s.Engine.CancelCampaign(ctx, principal(rc).AccountID, id); err != nil {
		return err
	}
	c, err := s.pathCampaign(ctx, rc)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newCampaignJSON(c))
}
