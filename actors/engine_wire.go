// The wire: tenant commands and their answers as the protobuf messages nodes send each other
// (actors/wire), and back. Only what the front door hands the engine crosses nodes; what
// actors send each other inside a node stays Go values.

package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors/wire"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// errBadWire refuses a message from another node that does not decode: a node of another
// version, or a bug. Nothing was done.
var errBadWire = errors.New("a message from another node did not decode")

func idBytes(id uuid.UUID) []byte { return id[:] }

func idOf(b []byte) (uuid.UUID, error) {
	if len(b) != 16 {
		return uuid.Nil, fmt.Errorf("%w: an id of %d bytes", errBadWire, len(b))
	}
	return uuid.UUID(b), nil
}

func optIDBytes(id *uuid.UUID) []byte {
	if id == nil {
		return nil
	}
	return id[:]
}

func optIDOf(b []byte) (*uuid.UUID, error) {
	if len(b) == 0 {
		return nil, nil
	}
	id, err := idOf(b)
	return &id, err
}

func optTime(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func timeOf(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := time.Unix(0, *n).UTC()
	return &t
}

func wireRecipients(rs []persistence.Recipient) *wire.Recipients {
	out := &wire.Recipients{Nsns: make([]uint32, len(rs)), Networks: make([]byte, len(rs))}
	for i, r := range rs {
		out.Nsns[i], out.Networks[i] = r.NSN, byte(r.Network)
	}
	return out
}

func recipientsOf(w *wire.Recipients) ([]persistence.Recipient, error) {
	if w == nil || len(w.Nsns) == 0 && len(w.Networks) == 0 {
		return nil, nil
	}
	if len(w.Nsns) != len(w.Networks) {
		return nil, fmt.Errorf("%w: %d numbers with %d networks", errBadWire, len(w.Nsns), len(w.Networks))
	}
	out := make([]persistence.Recipient, len(w.Nsns))
	for i := range w.Nsns {
		n := carriers.Network(w.Networks[i])
		if int(n) >= carriers.NetworkSlots {
			return nil, fmt.Errorf("%w: network %d", errBadWire, n)
		}
		out[i] = persistence.Recipient{NSN: w.Nsns[i], Network: n}
	}
	return out, nil
}

func wireSender(s *persistence.Sender) *wire.Sender {
	if s == nil {
		return nil
	}
	return &wire.Sender{Id: idBytes(s.ID), Name: s.Name, Network: s.Network}
}

func senderOf(w *wire.Sender) (*persistence.Sender, error) {
	if w == nil {
		return nil, nil
	}
	id, err := idOf(w.Id)
	return &persistence.Sender{ID: id, Name: w.Name, Network: w.Network}, err
}

func wireKey(k *persistence.IdempotencyKey) *wire.IdempotencyKey {
	if k == nil {
		return nil
	}
	return &wire.IdempotencyKey{AccountId: idBytes(k.AccountID), Key: k.Key, Claim: idBytes(k.Claim)}
}

func keyOf(w *wire.IdempotencyKey) (*persistence.IdempotencyKey, error) {
	if w == nil {
		return nil, nil
	}
	acct, err := idOf(w.AccountId)
	if err != nil {
		return nil, err
	}
	claim, err := idOf(w.Claim)
	return &persistence.IdempotencyKey{AccountID: acct, Key: w.Key, Claim: claim}, err
}

func wireSend(r SendRequest, quote bool) *wire.SendRequest {
	return &wire.SendRequest{AccountId: idBytes(r.AccountID), Recipients: wireRecipients(r.Recipients), Message: r.Message,
		Sender: wireSender(r.Sender), Source: r.Source, Idempotency: wireKey(r.Idempotency), Reference: r.Reference,
		Promotional: r.Promotional, Quote: quote, MessageId: optionalID(r.MessageID), Receipt: uint32(r.Receipt)}
}

// optionalID is an id's bytes, none for uuid.Nil.
func optionalID(id uuid.UUID) []byte {
	if id == uuid.Nil {
		return nil
	}
	return idBytes(id)
}

func sendOf(w *wire.SendRequest) (SendRequest, error) {
	var r SendRequest
	var err error
	if r.AccountID, err = idOf(w.AccountId); err != nil {
		return r, err
	}
	if r.Recipients, err = recipientsOf(w.Recipients); err != nil {
		return r, err
	}
	if r.Sender, err = senderOf(w.Sender); err != nil {
		return r, err
	}
	if r.Idempotency, err = keyOf(w.Idempotency); err != nil {
		return r, err
	}
	r.Message, r.Source, r.Reference, r.Promotional = w.Message, w.Source, w.Reference, w.Promotional
	if w.Receipt > uint32(persistence.ReceiptFailure) {
		return r, fmt.Errorf("send request: receipt mode %d", w.Receipt)
	}
	r.Receipt = persistence.ReceiptMode(w.Receipt)
	if len(w.MessageId) > 0 {
		if r.MessageID, err = idOf(w.MessageId); err != nil {
			return r, err
		}
	}
	return r, nil
}

func wireSendResult(r *SendResult) *wire.SendResult {
	out := &wire.SendResult{JobId: idBytes(r.JobID), Recipients: int64(r.Recipients), Suppressed: int64(r.Suppressed),
		Units: r.Units, CostCents: r.CostCents}
	for _, id := range r.MessageIDs {
		out.MessageIds = append(out.MessageIds, idBytes(id))
	}
	return out
}

func sendResultOf(w *wire.SendResult) (*SendResult, error) {
	id, err := idOf(w.JobId)
	if err != nil {
		return nil, err
	}
	r := &SendResult{JobID: id, Recipients: int(w.Recipients), Suppressed: int(w.Suppressed), Units: w.Units, CostCents: w.CostCents}
	for _, b := range w.MessageIds {
		m, err := idOf(b)
		if err != nil {
			return nil, err
		}
		r.MessageIDs = append(r.MessageIDs, m)
	}
	return r, nil
}

func wireQuote(q *Quote) *wire.Quote {
	out := &wire.Quote{Recipients: int64(q.Recipients), Suppressed: int64(q.Suppressed), MessageAsSent: q.MessageAsSent,
		Encoding: int32(q.Encoding), Characters: int64(q.Characters), Parts: int64(q.Parts), CostCents: q.CostCents,
		AvailableCents: q.AvailableCents, Sufficient: q.Sufficient}
	for _, n := range q.ByNetwork {
		out.ByNetwork = append(out.ByNetwork, int64(n))
	}
	if s := q.Suggestion; s != nil {
		ws := &wire.QuoteSuggestion{Message: s.Message, MessageAsSent: s.MessageAsSent, Encoding: int32(s.Encoding),
			Parts: int64(s.Parts), CostCents: s.CostCents}
		for _, r := range s.Replacements {
			ws.Replacements = append(ws.Replacements, &wire.Replacement{From: r.From, To: r.To, Count: int64(r.Count)})
		}
		out.Suggestion = ws
	}
	return out
}

func quoteOf(w *wire.Quote) (*Quote, error) {
	if len(w.ByNetwork) != carriers.NetworkSlots {
		return nil, fmt.Errorf("%w: a quote of %d networks", errBadWire, len(w.ByNetwork))
	}
	q := &Quote{Recipients: int(w.Recipients), Suppressed: int(w.Suppressed), MessageAsSent: w.MessageAsSent,
		Encoding: carriers.Encoding(w.Encoding), Characters: int(w.Characters), Parts: int(w.Parts), CostCents: w.CostCents,
		AvailableCents: w.AvailableCents, Sufficient: w.Sufficient}
	for i, n := range w.ByNetwork {
		q.ByNetwork[i] = int(n)
	}
	if s := w.Suggestion; s != nil {
		qs := &QuoteSuggestion{Message: s.Message, MessageAsSent: s.MessageAsSent, Encoding: carriers.Encoding(s.Encoding),
			Parts: int(s.Parts), CostCents: s.CostCents}
		for _, r := range s.Replacements {
			qs.Replacements = append(qs.Replacements, carriers.Replacement{From: r.From, To: r.To, Count: int(r.Count)})
		}
		q.Suggestion = qs
	}
	return q, nil
}

func wireCampaign(r CampaignRequest) *wire.CampaignRequest {
	c := r.Campaign
	out := &wire.CampaignRequest{AccountId: idBytes(r.AccountID), Id: idBytes(c.ID), Name: c.Name, Template: c.Template,
		GroupId: idBytes(c.GroupID), GroupName: c.GroupName, SenderId: optIDBytes(c.SenderID), ScheduledAtUnixNano: optTime(c.ScheduledAt),
		Sender: wireSender(r.Sender), Idempotency: wireKey(r.Idempotency), Reference: r.Reference, Promotional: r.Promotional,
		Source: r.Source}
	rs := make([]persistence.Recipient, len(r.Audience))
	out.FirstNames, out.LastNames = make([]string, len(r.Audience)), make([]string, len(r.Audience))
	for i, m := range r.Audience {
		rs[i], out.FirstNames[i], out.LastNames[i] = m.Recipient, m.FirstName, m.LastName
	}
	out.Audience = wireRecipients(rs)
	return out
}

func campaignOf(w *wire.CampaignRequest) (CampaignRequest, error) {
	var r CampaignRequest
	var err error
	if r.AccountID, err = idOf(w.AccountId); err != nil {
		return r, err
	}
	c := &r.Campaign
	if c.ID, err = idOf(w.Id); err != nil {
		return r, err
	}
	if c.GroupID, err = idOf(w.GroupId); err != nil {
		return r, err
	}
	if c.SenderID, err = optIDOf(w.SenderId); err != nil {
		return r, err
	}
	c.Name, c.Template, c.GroupName, c.ScheduledAt = w.Name, w.Template, w.GroupName, timeOf(w.ScheduledAtUnixNano)
	rs, err := recipientsOf(w.Audience)
	if err != nil {
		return r, err
	}
	if len(w.FirstNames) != len(rs) || len(w.LastNames) != len(rs) {
		return r, fmt.Errorf("%w: %d members with %d and %d names", errBadWire, len(rs), len(w.FirstNames), len(w.LastNames))
	}
	if len(rs) > 0 {
		r.Audience = make([]persistence.Member, len(rs))
	}
	for i := range rs {
		r.Audience[i] = persistence.Member{Recipient: rs[i], FirstName: w.FirstNames[i], LastName: w.LastNames[i]}
	}
	if r.Sender, err = senderOf(w.Sender); err != nil {
		return r, err
	}
	if r.Idempotency, err = keyOf(w.Idempotency); err != nil {
		return r, err
	}
	r.Reference, r.Promotional, r.Source = w.Reference, w.Promotional, w.Source
	return r, nil
}

func wireCredit(c persistence.NewCredit) *wire.Credit {
	return &wire.Credit{AccountId: idBytes(c.AccountID), Cents: c.Cents, Type: string(c.Type), Reference: c.Reference,
		Description: c.Description, Idempotency: wireKey(c.Idempotency)}
}

func creditOf(w *wire.Credit) (persistence.NewCredit, error) {
	acct, err := idOf(w.AccountId)
	if err != nil {
		return persistence.NewCredit{}, err
	}
	k, err := keyOf(w.Idempotency)
	return persistence.NewCredit{AccountID: acct, Cents: w.Cents, Type: persistence.TransactionType(w.Type), Reference: w.Reference,
		Description: w.Description, Idempotency: k}, err
}

func wireWallet(s *persistence.WalletSnapshot) *wire.Wallet {
	if s == nil {
		return nil
	}
	return &wire.Wallet{AccountId: idBytes(s.AccountID), BalanceCents: s.BalanceCents, Version: s.Version, LifetimeSms: s.LifetimeSMS}
}

func walletOf(w *wire.Wallet) (*persistence.WalletSnapshot, error) {
	if w == nil {
		return nil, nil
	}
	acct, err := idOf(w.AccountId)
	return &persistence.WalletSnapshot{AccountID: acct, BalanceCents: w.BalanceCents, Version: w.Version, LifetimeSMS: w.LifetimeSms}, err
}

func wirePayment(p persistence.Payment) *wire.Payment {
	return &wire.Payment{Id: idBytes(p.ID), AccountId: idBytes(p.AccountID), Reference: p.Reference, Purpose: string(p.Purpose),
		SenderId: optIDBytes(p.SenderID), AmountCents: p.AmountCents, Currency: p.Currency, Email: p.Email, Provider: p.Provider,
		Status: string(p.Status), AccessCode: p.AccessCode, AuthorizationUrl: p.AuthorizationURL, FailureReason: p.FailureReason,
		PaidAtUnixNano: optTime(p.PaidAt), CreatedAtUnixNano: p.CreatedAt.UnixNano()}
}

func paymentOf(w *wire.Payment) (persistence.Payment, error) {
	var p persistence.Payment
	var err error
	if w == nil {
		return p, fmt.Errorf("%w: no payment", errBadWire)
	}
	if p.ID, err = idOf(w.Id); err != nil {
		return p, err
	}
	if p.AccountID, err = idOf(w.AccountId); err != nil {
		return p, err
	}
	if p.SenderID, err = optIDOf(w.SenderId); err != nil {
		return p, err
	}
	p.Reference, p.Purpose, p.AmountCents, p.Currency = w.Reference, persistence.PaymentPurpose(w.Purpose), w.AmountCents, w.Currency
	p.Email, p.Provider, p.Status = w.Email, w.Provider, persistence.PaymentStatus(w.Status)
	p.AccessCode, p.AuthorizationURL, p.FailureReason = w.AccessCode, w.AuthorizationUrl, w.FailureReason
	p.PaidAt, p.CreatedAt = timeOf(w.PaidAtUnixNano), time.Unix(0, w.CreatedAtUnixNano).UTC()
	return p, nil
}
