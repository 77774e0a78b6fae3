package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
)

type sendResponse struct {
	JobID           uuid.UUID `json:"job_id"`
	RecipientsCount int       `json:"recipients_count"`
	CostKES         kes       `json:"cost_kes"`
	Status          string    `json:"status"`
}

func (s *Server) send(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	p := principal(rc)
	return s.idempotent(ctx, rc, idempotentOp{scope: p.AccountID, fromResource: s.replaySend},
		func(key *persistence.IdempotencyKey) error {
			res, err := s.sendOnce(ctx, rc, p, key)
			if err != nil {
				return err
			}
			return writeJSON(rc, http.StatusAccepted, sendResponse{JobID: res.JobID, RecipientsCount: res.Recipients,
				CostKES: kes(res.CostCents), Status: "sent"})
		})
}

// replaySend renders the answer of a send from the job it created.
func (s *Server) replaySend(ctx context.Context, accountID, jobID uuid.UUID) (any, error) {
	j, err := s.Queries.JobByID(ctx, accountID, jobID)
	if err != nil {
		return nil, err
	}
	return sendResponse{JobID: j.ID, RecipientsCount: j.RecipientsCount, CostKES: kes(j.CostCents), Status: "sent"}, nil
}

func (s *Server) sendOnce(ctx context.Context, rc *fasthttp.RequestCtx, p auth.Principal, key *persistence.IdempotencyKey) (actors.SendResult, error) {
	in, err := parseSend(rc.PostBody(), s.Plan)
	if err != nil {
		return actors.SendResult{}, err
	}
	req := actors.SendRequest{AccountID: p.AccountID, Recipients: in.recipients, Message: in.message,
		Source: string(p.Source), Idempotency: key}
	if in.senderID != "" {
		snd, err := s.Queries.ApprovedSender(ctx, p.AccountID, in.senderID)
		if errors.Is(err, persistence.ErrNotFound) {
			return actors.SendResult{}, invalidAs("sender_not_approved",
				FieldError{Field: "sender_id", Message: "is not an approved, active sender ID of this account"})
		}
		if err != nil {
			return actors.SendResult{}, err
		}
		req.Sender = &snd
	}
	return s.Engine.Send(ctx, req)
}

// messageJSON is the message object (CONTRACT §4).
type messageJSON struct {
	ID                uuid.UUID                 `json:"id"`
	JobID             uuid.UUID                 `json:"job_id"`
	CampaignID        *uuid.UUID                `json:"campaign_id"`
	Recipient         string                    `json:"recipient"`
	Network           string                    `json:"network"`
	SenderID          string                    `json:"sender_id"`
	Message           string                    `json:"message"`
	Parts             int                       `json:"parts"`
	Encoding          string                    `json:"encoding"`
	CostKES           kes                       `json:"cost_kes"`
	Status            persistence.MessageStatus `json:"status"`
	ProviderStatus    string                    `json:"provider_status"`
	ProviderMessageID *string                   `json:"provider_message_id"`
	Source            string                    `json:"source"`
	CreatedAt         timestamp                 `json:"created_at"`
	SentAt            *timestamp                `json:"sent_at"`
	DeliveredAt       *timestamp                `json:"delivered_at"`
}

func newMessageJSON(m persistence.Message) messageJSON {
	return messageJSON{
		ID: m.ID, JobID: m.JobID, CampaignID: m.CampaignID, Recipient: m.Recipient, Network: m.Network.String(),
		SenderID: m.Sender, Message: m.Text, Parts: m.Parts, Encoding: m.Encoding.String(), CostKES: kes(m.CostCents),
		Status: m.Status, ProviderStatus: m.ProviderStatus, ProviderMessageID: m.ProviderMessageID, Source: m.Source,
		CreatedAt: timestamp(m.CreatedAt), SentAt: optTime(m.SentAt), DeliveredAt: optTime(m.DeliveredAt),
	}
}

func optTime(t *time.Time) *timestamp {
	if t == nil {
		return nil
	}
	ts := timestamp(*t)
	return &ts
}

func (s *Server) listMessages(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	acct := principal(rc).AccountID
	f := persistence.MessageFilter{Status: enum(q, "status", persistence.MessageStatuses()),
		JobID: q.UUID("job_id"), CampaignID: q.UUID("campaign_id")}
	l := s.list(listMessages, acct, "status="+string(f.Status), "job_id="+optID(f.JobID), "campaign_id="+optID(f.CampaignID))
	page := q.Page(l)
	if err := q.err(); err != nil {
		return err
	}
	msgs, total, err := s.Queries.ListMessages(ctx, acct, f, page)
	if err != nil {
		return err
	}
	out := make([]messageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = newMessageJSON(m)
	}
	return writeJSON(rc, http.StatusOK, newEnvelope(out, total, page, l, func(m messageJSON) uuid.UUID { return m.ID }))
}

func (s *Server) getMessage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	m, err := s.Queries.MessageByID(ctx, principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newMessageJSON(m))
}

// delivery checks a message's status with its network now, records what the network says,
// and returns the stored record.
func (s *Server) delivery(ctx context.Context, rc *fasthttp.RequestCtx) error {
	providerID, _ := rc.UserValue("provider_message_id").(string)
	acct := principal(rc).AccountID
	m, err := s.Queries.MessageByProviderID(ctx, acct, providerID)
	if err != nil {
		return err
	}
	if m.Status == "sent" {
		st, err := s.Engine.LiveStatus(ctx, m.Network, providerID)
		switch {
		case errors.Is(err, actors.ErrUnknownMessage):
			// The network has forgotten it; the stored record is all there is.
		case err != nil:
			p := problem("carrier_unavailable", "the "+m.Network.String()+" network did not answer the status check; try again shortly")
			p.RetryAfter = 5
			return p
		default:
			if err := s.Engine.Sync(ctx, m.Network, providerID, st); err != nil {
				return err
			}
			if m, err = s.Queries.MessageByID(ctx, acct, m.ID); err != nil {
				return err
			}
		}
	}
	return writeJSON(rc, http.StatusOK, newMessageJSON(m))
}

func (s *Server) stats(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := s.Queries.MessageCounts(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, struct {
		Total     int64 `json:"total"`
		Delivered int64 `json:"delivered"`
		Sent      int64 `json:"sent"`
		Failed    int64 `json:"failed"`
		Queued    int64 `json:"queued"`
	}{c.Total(), c.Delivered, c.Sent, c.Failed, c.Queued})
}
