// The body of a delivery: {"events":[…]}, oldest first.

package webhooks

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

type eventJSON struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// messageData is a message event's data (CONTRACT §14).
type messageData struct {
	MessageID         uuid.UUID  `json:"message_id"`
	JobID             *uuid.UUID `json:"job_id"`
	CampaignID        *uuid.UUID `json:"campaign_id"`
	Reference         *string    `json:"reference"`
	Recipient         string     `json:"recipient,omitempty"`
	Network           string     `json:"network,omitempty"`
	SenderID          string     `json:"sender_id,omitempty"`
	Status            string     `json:"status"`
	ProviderStatus    string     `json:"provider_status"`
	ProviderMessageID *string    `json:"provider_message_id"`
	Parts             int        `json:"parts,omitempty"`
	CostKES           kes        `json:"cost_kes"`
	SentAt            *string    `json:"sent_at"`
	DeliveredAt       *string    `json:"delivered_at"`
}

// kes is integer cents shown as KES with two decimals, as the API shows money.
type kes int64

func (k kes) MarshalJSON() ([]byte, error) {
	b := strconv.AppendInt(nil, int64(k)/100, 10)
	c := int64(k) % 100
	return append(b, '.', byte('0'+c/10), byte('0'+c%10)), nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func optStamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := stamp(*t)
	return &s
}

// Body renders a delivery's events; msgs has the messages its message events describe. A
// message event shows its message as the event left it: message.sent is "sent" whatever
// happened since, so every attempt of a delivery carries the same events.
func Body(d persistence.WebhookDelivery, msgs map[uuid.UUID]persistence.MessageEventData) ([]byte, error) {
	evs := make([]eventJSON, len(d.Events))
	for i, e := range d.Events {
		evs[i] = eventJSON{ID: e.ID(), Type: string(e.Type), CreatedAt: stamp(e.CreatedAt), Data: e.Data}
		if !e.Type.IsMessage() {
			if evs[i].Data == nil {
				evs[i].Data = json.RawMessage("{}")
			}
			continue
		}
		data, err := json.Marshal(messageEvent(e, msgs[e.MessageID]))
		if err != nil {
			return nil, err
		}
		evs[i].Data = data
	}
	return json.Marshal(struct {
		Events []eventJSON `json:"events"`
	}{evs})
}

func messageEvent(e persistence.WebhookEvent, m persistence.MessageEventData) messageData {
	out := messageData{MessageID: e.MessageID, Status: string(persistence.MessageSent)}
	if m.ID == uuid.Nil { // gone since (deleted with its account): the id is all there is
		return out
	}
	out.JobID, out.CampaignID, out.Reference = &m.JobID, m.CampaignID, m.Reference
	out.Recipient, out.Network, out.SenderID = m.Recipient, m.Network.String(), m.Sender
	out.ProviderMessageID, out.Parts, out.CostKES = m.ProviderMessageID, m.Parts, kes(m.CostCents)
	out.SentAt, out.ProviderStatus = optStamp(m.SentAt), m.ProviderStatus
	switch e.Type {
	case persistence.EventMessageSent:
		if m.Status != persistence.MessageSent { // final since: show the status the event reported
			out.ProviderStatus = "ENROUTE"
			if m.ProviderMessageID == nil {
				out.ProviderStatus = "UNKNOWN"
			}
		}
	case persistence.EventMessageDelivered:
		out.Status, out.DeliveredAt = string(persistence.MessageDelivered), optStamp(m.DeliveredAt)
	case persistence.EventMessageFailed:
		out.Status = string(persistence.MessageFailed)
	}
	return out
}
