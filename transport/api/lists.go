// Lists: how the API pages growing lists, by page number or by opaque cursors, and the
// pagination envelope.

package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// ListKind names a list a cursor belongs to; every list the API pages has its own.
type ListKind byte

// The lists that page by cursor.
const (
	MessageList         ListKind = iota + 1 // an account's messages
	TransactionList                         // an account's ledger
	ReviewList                              // the operators' sender ID review queue (pages by number only)
	ContactList                             // an account's active contacts
	CampaignList                            // an account's campaigns (plain array; by cursor when page_size is given)
	WebhookDeliveryList                     // a webhook endpoint's delivery log (by cursor only)
	SuppressionList                         // an account's suppressed numbers (by cursor only)
	InboundList                             // an account's inbound messages (by cursor only)
)

// Lists describes lists for their cursors, keyed with a server secret.
type Lists struct{ key []byte }

// NewLists keys cursors with key (derived from TUMA_JWT_SECRET).
func NewLists(key []byte) Lists { return Lists{key: key} }

// Of describes one of an account's lists; filters are the name=value pairs it was asked with.
func (ls Lists) Of(kind ListKind, account uuid.UUID, filters ...string) List {
	return List{kind: kind, account: account, scope: strings.Join(filters, "&"), key: ls.key}
}

// List is how a list is paged: by page number, or by a cursor (keyset) that pages a list
// growing at its head without showing any row twice. A cursor holds the list, the last row
// id, and a MAC over both with the account and the filters: a cursor altered, or used by
// another account or with other filters, fails the MAC, so it can never page into rows its
// holder was not listing.
type List struct {
	kind    ListKind
	account uuid.UUID
	scope   string // the filters a cursor was issued with
	key     []byte
}

const cursorMAC = 16

func (l List) mac(last uuid.UUID) []byte {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte{byte(l.kind)})
	m.Write(l.account[:])
	m.Write(last[:])
	m.Write([]byte(l.scope))
	return m.Sum(nil)[:cursorMAC]
}

// Cursor is the cursor of the page after the row last.
func (l List) Cursor(last uuid.UUID) string {
	b := make([]byte, 0, 1+16+cursorMAC)
	b = append(b, byte(l.kind))
	b = append(b, last[:]...)
	b = append(b, l.mac(last)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (l List) decode(s string) (uuid.UUID, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 1+16+cursorMAC || b[0] != byte(l.kind) {
		return uuid.Nil, false
	}
	last := uuid.UUID(b[1:17])
	return last, hmac.Equal(b[17:], l.mac(last))
}

// OptID is an optional id as a filter's value ("" for none).
func OptID(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

// Envelope is the spec's pagination envelope. Beyond the spec, next_cursor continues the list
// after this page's last row (null at its end), and page is 0 for a page read by cursor.
type Envelope[T any] struct {
	Data       []T     `json:"data"`
	Total      int64   `json:"total"`
	Page       int     `json:"page"`
	PageSize   int     `json:"page_size"`
	Pages      int64   `json:"pages"`
	NextCursor *string `json:"next_cursor"`
}

// NewEnvelope wraps a page; lastID is the id of a row, for the next cursor.
func NewEnvelope[T any](data []T, total int64, p persistence.Page, l List, lastID func(T) uuid.UUID) Envelope[T] {
	if data == nil {
		data = []T{}
	}
	pages := (total + int64(p.Size) - 1) / int64(p.Size)
	e := Envelope[T]{Data: data, Total: total, Page: p.Number, PageSize: p.Size, Pages: pages}
	if len(data) == p.Size && len(data) > 0 {
		c := l.Cursor(lastID(data[len(data)-1]))
		e.NextCursor = &c
	}
	return e
}
