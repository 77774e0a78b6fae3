package sms

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Accepted is a send's answer (the 202): its job, durably queued and charged.
type Accepted struct {
	JobID           uuid.UUID `json:"job_id"`
	RecipientsCount int       `json:"recipients_count"` // the ones it messages
	SuppressedCount int       `json:"suppressed_count"` // left out: on the account's suppression list, not charged
	// SMSCount is the SMS parts billed: each recipient's message as sent (any company prefix
	// included), summed. CostKES is SMSCount × the account's price per SMS.
	SMSCount int64   `json:"sms_count"`
	CostKES  api.KES `json:"cost_kes"`
	Status   string  `json:"status"`
	// MessageID is the send's message when it has one recipient, written with its job
	// (uuid.Nil otherwise, and on a replay): the SMPP server's answer. Not answered over
	// HTTP, where GET /sms/messages?job_id= lists a job's messages.
	MessageID uuid.UUID `json:"-"`
}

// Send checks the input and sends it: it returns once the job, its messages and its debit
// are durable. key is the request's claimed Idempotency-Key, completed with the job (nil:
// none); a caller that holds only the key's text calls SendOnce. Bad input is a *api.Problem
// (422 naming the fields, as POST /sms/send answers it).
func (h *Handler) Send(ctx context.Context, p auth.Principal, in SendInput, key *persistence.IdempotencyKey) (Accepted, error) {
	_, req, err := h.request(ctx, p, in, false)
	if err != nil {
		return Accepted{}, err
	}
	req.Idempotency = key
	res, err := h.engine.Send(ctx, req)
	if err != nil {
		return Accepted{}, err
	}
	a := Accepted{JobID: res.JobID, RecipientsCount: res.Recipients, SuppressedCount: res.Suppressed, SMSCount: res.Units,
		CostKES: api.KES(res.CostCents),
		Status:  "sent"}
	if len(res.MessageIDs) == 1 {
		a.MessageID = res.MessageIDs[0]
	}
	return a, nil
}

// formKeys keeps the keys of SendOnce apart from the Idempotency-Keys of the account's API
// clients.
const formKeys = "form:"

// SendOnce is Send under an idempotency key given as text (the dashboard's form sets one per
// render; "": none). The first call with a key sends; a later call with the same key and the
// same input sends nothing and returns the first one's answer, replayed true; the same key
// with another input is 422 idempotency_key_reused, and while the first call still runs, a
// second one waits for its outcome (or, past its deadline, is 409 idempotency_key_in_use).
// A call that failed without sending gives its key back, so it can be retried with it.
func (h *Handler) SendOnce(ctx context.Context, p auth.Principal, in SendInput, key string) (a Accepted, replayed bool, err error) {
	if key == "" {
		a, err = h.Send(ctx, p, in, nil)
		return a, false, err
	}
	op := api.Op{Scope: p.AccountID, Namespace: formKeys, FromResource: h.replaySend, Wait: true}
	r, err := h.keys.Do(ctx, op, key, in.fingerprint(), func(k *persistence.IdempotencyKey) error {
		var err error
		a, err = h.Send(ctx, p, in, k)
		return err
	})
	if r == nil || err != nil {
		return a, r != nil, err
	}
	if v, ok := r.Value.(Accepted); ok {
		return v, true, nil
	}
	if err := json.Unmarshal(r.Body, &a); err != nil {
		return Accepted{}, true, fmt.Errorf("replay of a send: %w", err)
	}
	return a, true, nil
}

// fingerprint identifies the input, for its idempotency key: the same key with another
// input is refused.
func (in SendInput) fingerprint() []byte {
	h := sha256.New()
	put := func(s string) { // length-prefixed: no two inputs write the same bytes
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		io.WriteString(h, s)
	}
	put(in.Message)
	put(in.SenderID)
	// One byte says which optional fields follow; a send without a category hashes as it did
	// before sends had one, so keys stored earlier still match their retries.
	var flags byte
	if in.Reference != nil {
		flags |= 1
	}
	if in.Category != "" {
		flags |= 2
	}
	h.Write([]byte{flags})
	if in.Reference != nil {
		put(*in.Reference)
	}
	if in.Category != "" {
		put(in.Category)
	}
	for _, r := range in.Recipients {
		put(r)
	}
	return h.Sum(nil)
}

func (h *Handler) send(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	p := api.Principal(rc)
	return h.keys.Run(ctx, rc, api.Op{Scope: p.AccountID, FromResource: h.replaySend},
		func(key *persistence.IdempotencyKey) error {
			in, err := decodeSend(rc.PostBody(), h.plan)
			if err != nil {
				return err
			}
			a, err := h.Send(ctx, p, in, key)
			if err != nil {
				return err
			}
			return api.WriteJSON(rc, http.StatusAccepted, a)
		})
}

// replaySend renders the answer of a send from the job it created.
func (h *Handler) replaySend(ctx context.Context, accountID, jobID uuid.UUID) (any, error) {
	j, err := h.store.JobByID(ctx, accountID, jobID)
	if err != nil {
		return nil, err
	}
	return Accepted{JobID: j.ID, RecipientsCount: j.RecipientsCount, SuppressedCount: j.Suppressed, SMSCount: j.SMSUnits,
		CostKES: api.KES(j.CostCents),
		Status:  "sent"}, nil
}
