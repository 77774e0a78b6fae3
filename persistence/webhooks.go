// Webhook endpoints (CONTRACT §14): where an account wants its events pushed, which events,
// and the secret that signs them.

package persistence

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// EventType is the type of a webhook event. Its place in EventTypes is its code in the
// database and its bit in an endpoint's event mask.
type EventType string

const (
	EventMessageSent      EventType = "message.sent"
	EventMessageDelivered EventType = "message.delivered"
	EventMessageFailed    EventType = "message.failed"
	EventMessageReceived  EventType = "message.received" // written by the consent work (issue 34)
	EventOptoutCreated    EventType = "optout.created"   // idem
	EventOptoutRemoved    EventType = "optout.removed"   // idem
	EventCampaignDone     EventType = "campaign.completed"
	EventTopupSucceeded   EventType = "wallet.topup_succeeded"
	EventLowBalance       EventType = "wallet.low_balance"
	EventSenderApproved   EventType = "sender_id.approved"
	EventSenderRejected   EventType = "sender_id.rejected"
	EventTest             EventType = "webhook.test"
)

// eventTypes is every event type in code order: append only, the codes are stored.
var eventTypes = [...]EventType{EventMessageSent, EventMessageDelivered, EventMessageFailed, EventMessageReceived,
	EventOptoutCreated, EventOptoutRemoved, EventCampaignDone, EventTopupSucceeded, EventLowBalance,
	EventSenderApproved, EventSenderRejected, EventTest}

// EventTypes are every event type an endpoint may subscribe to.
func EventTypes() []EventType { return slices.Clone(eventTypes[:]) }

func (t EventType) code() int16 {
	for i, x := range eventTypes {
		if x == t {
			return int16(i)
		}
	}
	return -1
}

func (t EventType) bit() int32 { return 1 << t.code() }

// eventTypeOf is the type of a stored code.
func eventTypeOf(code int16) EventType {
	if code < 0 || int(code) >= len(eventTypes) {
		return EventType(fmt.Sprintf("unknown.%d", code))
	}
	return eventTypes[code]
}

// IsMessage reports a message event, whose payload is the message as it was.
func (t EventType) IsMessage() bool {
	return t == EventMessageSent || t == EventMessageDelivered || t == EventMessageFailed
}

// Webhook limits (CONTRACT §14).
const (
	MaxWebhooks       = 10  // endpoints per account
	MaxWebhookBatch   = 100 // events per delivery
	maxWebhookDescLen = 500
	maxWebhookURLLen  = 2000
)

// ErrWebhookLimit: the account has MaxWebhooks endpoints already (problem limit_reached).
var ErrWebhookLimit = errors.New("an account may have at most 10 webhook endpoints")

// WebhookFieldError is an endpoint field the rules refuse; nothing was stored.
type WebhookFieldError struct {
	Field   string // url, events, batch_size, description, expires_in_seconds
	Message string
}

func (e *WebhookFieldError) Error() string { return e.Field + " " + e.Message }

// Webhook is an endpoint as the tenant sees it (never its secret).
type Webhook struct {
	ID, AccountID  uuid.UUID
	URL            string
	Events         []string // as subscribed: types, or ["*"]
	Description    string
	BatchSize      int
	Enabled        bool
	DisabledReason *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// NewWebhook is an endpoint to create. The URL's own rules (https, where it resolves) are the
// caller's to check first (transport/webhooks.Policy); the rest are checked here.
type NewWebhook struct {
	AccountID   uuid.UUID
	URL         string
	Events      []string
	Description string
	BatchSize   int // 0: 1
}

// WebhookPatch changes the fields that are set.
type WebhookPatch struct {
	URL         *string
	Events      *[]string
	Description *string
	BatchSize   *int
	Enabled     *bool
}

// eventMask checks a subscription list and returns it as bits: "*" alone means every type.
func eventMask(events []string) (int32, error) {
	if len(events) == 0 {
		return 0, &WebhookFieldError{"events", "must name at least one event type, or \"*\""}
	}
	var mask int32
	for _, e := range events {
		if e == "*" {
			if len(events) != 1 {
				return 0, &WebhookFieldError{"events", "\"*\" must be alone"}
			}
			for _, t := range eventTypes {
				mask |= t.bit()
			}
			return mask, nil
		}
		t := EventType(e)
		if t.code() < 0 {
			return 0, &WebhookFieldError{"events", fmt.Sprintf("has an unknown event type %q", e)}
		}
		mask |= t.bit()
	}
	return mask, nil
}

func checkBatchSize(n int) error {
	if n < 1 || n > MaxWebhookBatch {
		return &WebhookFieldError{"batch_size", "must be from 1 to 100"}
	}
	return nil
}

func checkWebhookText(url, desc string) error {
	// Characters, as the API and its schema's maxLength count them, not bytes.
	if url == "" || utf8.RuneCountInString(url) > maxWebhookURLLen {
		return &WebhookFieldError{"url", fmt.Sprintf("must be a URL of at most %d characters", maxWebhookURLLen)}
	}
	if utf8.RuneCountInString(desc) > maxWebhookDescLen {
		return &WebhookFieldError{"description", fmt.Sprintf("must be at most %d characters", maxWebhookDescLen)}
	}
	return nil
}

const webhookColumns = `id, account_id, url, events, description, batch_size, enabled, disabled_reason, created_at, updated_at`

func scanWebhook(row pgx.Row) (Webhook, error) {
	var w Webhook
	var batch int16
	err := row.Scan(&w.ID, &w.AccountID, &w.URL, &w.Events, &w.Description, &batch, &w.Enabled, &w.DisabledReason,
		&w.CreatedAt, &w.UpdatedAt)
	w.BatchSize = int(batch)
	return w, err
}

// CreateWebhook stores an endpoint and returns it with its secret, which is shown only now.
// An account's eleventh endpoint is ErrWebhookLimit; a field the rules refuse is a
// *WebhookFieldError. Events of changes committed after this returns reach it.
func (s *Store) CreateWebhook(ctx context.Context, n NewWebhook) (Webhook, string, error) {
	if n.BatchSize == 0 {
		n.BatchSize = 1
	}
	mask, err := eventMask(n.Events)
	if err == nil {
		err = checkBatchSize(n.BatchSize)
	}
	if err == nil {
		err = checkWebhookText(n.URL, n.Description)
	}
	if err != nil {
		return Webhook{}, "", err
	}
	secret, sealed, err := s.newWebhookSecret()
	if err != nil {
		return Webhook{}, "", err
	}
	var w Webhook
	err = s.changeSubscriptions(ctx, func(tx pgx.Tx) error {
		var count int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints WHERE account_id = $1`, n.AccountID).Scan(&count); err != nil {
			return err
		}
		if count >= MaxWebhooks {
			return ErrWebhookLimit
		}
		w, err = scanWebhook(tx.QueryRow(ctx, `INSERT INTO webhook_endpoints (id, account_id, url, events, event_mask, description, batch_size, secret)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+webhookColumns,
			NewID(), n.AccountID, n.URL, n.Events, mask, n.Description, n.BatchSize, sealed))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrWebhookLimit) {
			return Webhook{}, "", err
		}
		return Webhook{}, "", fmt.Errorf("create webhook: %w", err)
	}
	return w, secret, nil
}

// Webhooks lists the account's endpoints, oldest first.
func (s *Store) Webhooks(ctx context.Context, accountID uuid.UUID) ([]Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhook_endpoints WHERE account_id = $1 ORDER BY account_id, id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Webhook, error) { return scanWebhook(r) })
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return out, nil
}

// WebhookByID returns one of the account's endpoints; another account's is ErrNotFound.
func (s *Store) WebhookByID(ctx context.Context, accountID, id uuid.UUID) (Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Webhook{}, ErrNotFound
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("webhook: %w", err)
	}
	return w, nil
}

// UpdateWebhook changes an endpoint. Enabling one clears its disabled reason and failure
// streak and makes its waiting deliveries due.
func (s *Store) UpdateWebhook(ctx context.Context, accountID, id uuid.UUID, p WebhookPatch) (Webhook, error) {
	cur, err := s.WebhookByID(ctx, accountID, id)
	if err != nil {
		return Webhook{}, err
	}
	events, url, desc, batch := cur.Events, cur.URL, cur.Description, cur.BatchSize
	if p.Events != nil {
		events = *p.Events
	}
	if p.URL != nil {
		url = *p.URL
	}
	if p.Description != nil {
		desc = *p.Description
	}
	if p.BatchSize != nil {
		batch = *p.BatchSize
	}
	mask, err := eventMask(events)
	if err == nil {
		err = checkBatchSize(batch)
	}
	if err == nil {
		err = checkWebhookText(url, desc)
	}
	if err != nil {
		return Webhook{}, err
	}
	var w Webhook
	update := func(tx pgx.Tx) error {
		// enabled as it is now, under the row's lock: cur is from before the transaction, and
		// an attempt's 410 may have disabled the endpoint since; writing cur's back would
		// enable it without making its deliveries due.
		var was bool
		err := tx.QueryRow(ctx, `SELECT enabled FROM webhook_endpoints WHERE id = $1 AND account_id = $2 FOR UPDATE`,
			id, accountID).Scan(&was)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		enabled := was
		if p.Enabled != nil {
			enabled = *p.Enabled
		}
		w, err = scanWebhook(tx.QueryRow(ctx, `UPDATE webhook_endpoints SET url = $3, events = $4, event_mask = $5,
				description = $6, batch_size = $7, enabled = $8,
				disabled_reason = CASE WHEN $8 THEN NULL ELSE coalesce(disabled_reason, 'disabled by the account') END,
				failing_since = CASE WHEN $8 AND NOT enabled THEN NULL ELSE failing_since END, updated_at = now()
			WHERE id = $1 AND account_id = $2 RETURNING `+webhookColumns, id, accountID, url, events, mask, desc, batch, enabled))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil || enabled == was {
			return err
		}
		// Deliveries of a disabled endpoint wait (no due time) and go again when it is enabled.
		_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = CASE WHEN $2 THEN now() END
			WHERE endpoint_id = $1 AND status = 'pending'`, id, enabled)
		return err
	}
	if p.Enabled != nil || p.Events != nil { // what writers of events see may change
		err = s.changeSubscriptions(ctx, update)
	} else {
		err = pgx.BeginFunc(ctx, s.pool, update)
	}
	if errors.Is(err, ErrNotFound) {
		return Webhook{}, err
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("update webhook: %w", err)
	}
	return w, nil
}

// DeleteWebhook removes an endpoint with its waiting events and its delivery log.
func (s *Store) DeleteWebhook(ctx context.Context, accountID, id uuid.UUID) error {
	err := s.changeSubscriptions(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, id, accountID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM webhook_events WHERE endpoint_id = $1`, id)
		b.Queue(`DELETE FROM webhook_deliveries WHERE endpoint_id = $1`, id)
		return tx.SendBatch(ctx, b).Close()
	})
	if errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	return nil
}

// MaxSecretOverlap is the longest a rolled secret keeps signing.
const MaxSecretOverlap = 7 * 24 * time.Hour

// RollWebhookSecret gives an endpoint a new secret and returns it; the old one keeps signing
// beside it for overlap (0: not at all).
func (s *Store) RollWebhookSecret(ctx context.Context, accountID, id uuid.UUID, overlap time.Duration) (string, error) {
	if overlap < 0 || overlap > MaxSecretOverlap {
		return "", &WebhookFieldError{"expires_in_seconds", "must be from 0 to 604800"}
	}
	secret, sealed, err := s.newWebhookSecret()
	if err != nil {
		return "", err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_endpoints SET old_secret = CASE WHEN $4::interval > '0' THEN secret END,
			old_secret_until = CASE WHEN $4::interval > '0' THEN now() + $4::interval END, secret = $3, updated_at = now()
		WHERE id = $1 AND account_id = $2`, id, accountID, sealed, overlap)
	if err != nil {
		return "", fmt.Errorf("roll webhook secret: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return "", ErrNotFound
	}
	return secret, nil
}

// SecretPrefix starts every webhook secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// newWebhookSecret makes a secret: whsec_ and 32 random bytes in base64, and its sealed form.
func (s *Store) newWebhookSecret() (string, []byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", nil, fmt.Errorf("webhook secret: %w", err)
	}
	secret := SecretPrefix + base64.StdEncoding.EncodeToString(key)
	sealed, err := s.seal([]byte(secret))
	return secret, sealed, err
}

// devWebhookKey seals secrets when the node is given no key (development and tests).
const devWebhookKey = "tuma development webhook key: not for production"

// webhookAEAD is the cipher that seals secrets at rest, from Options.WebhookKey.
func webhookAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) == 0 {
		key = []byte(devWebhookKey)
	}
	k := sha256.Sum256(key)
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts a secret: nonce, then ciphertext with its tag.
func (s *Store) seal(plain []byte) ([]byte, error) {
	nonce := make([]byte, s.hooks.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal webhook secret: %w", err)
	}
	return s.hooks.aead.Seal(nonce, nonce, plain, nil), nil
}

// ErrSecretUnreadable: a stored secret does not open with this node's key (TUMA_WEBHOOK_SECRET_KEY changed?).
var ErrSecretUnreadable = errors.New("webhook secret cannot be decrypted with this node's key")

func (s *Store) open(sealed []byte) (string, error) {
	n := s.hooks.aead.NonceSize()
	if len(sealed) < n {
		return "", ErrSecretUnreadable
	}
	plain, err := s.hooks.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return "", ErrSecretUnreadable
	}
	return string(plain), nil
}
