// Query parameters: reading them, telling malformed ones (400) from out-of-range ones (422),
// and the opaque cursors that page through growing lists.

package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/strictjson"
)

// query reads a request's query parameters. A value that is not of its kind at all
// (page=abc) is malformed: 400, as CONTRACT §1 says. A well-formed value outside what the
// parameter allows (page_size=500, status=unknown) is invalid: 422.
type query struct {
	rc               *fasthttp.RequestCtx
	malformed, wrong fieldErrors
}

func newQuery(rc *fasthttp.RequestCtx) *query { return &query{rc: rc} }

// raw is a parameter's text; text no store can hold (a NUL, invalid UTF-8) is malformed.
func (q *query) raw(name string) string {
	v := string(q.rc.QueryArgs().Peek(name))
	if !strictjson.Storable(v) {
		q.malformed.add(name, "must be text without NUL bytes, in UTF-8")
		return ""
	}
	return v
}

// Int reads an integer parameter in [lo, hi], def when absent.
func (q *query) Int(name string, def, lo, hi int) int {
	raw := q.raw(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	switch {
	case err != nil:
		q.malformed.add(name, "must be an integer")
	case n < lo || n > hi:
		q.wrong.add(name, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	default:
		return n
	}
	return def
}

// IntIn reads an integer parameter that must be one of allowed, def when absent.
func (q *query) IntIn(name string, def int, allowed ...int) int {
	n := q.Int(name, def, math.MinInt, math.MaxInt)
	if slices.Contains(allowed, n) {
		return n
	}
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = strconv.Itoa(a)
	}
	q.wrong.add(name, "must be one of "+strings.Join(words, ", "))
	return def
}

// UUID reads an optional UUID parameter.
func (q *query) UUID(name string) *uuid.UUID {
	raw := q.raw(name)
	if raw == "" {
		return nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		q.malformed.add(name, "must be a UUID")
		return nil
	}
	return &id
}

// Enum reads an optional parameter that must be one of allowed ("" when absent).
func (q *query) Enum(name string, allowed ...string) string {
	raw := q.raw(name)
	if raw == "" {
		return ""
	}
	for _, a := range allowed {
		if raw == a {
			return raw
		}
	}
	q.wrong.add(name, "must be one of "+strings.Join(allowed, ", "))
	return ""
}

// enum reads an optional parameter that must be one of allowed ("" when absent or wrong).
func enum[T ~string](q *query, name string, allowed []T) T {
	raw := q.raw(name)
	if raw == "" {
		return ""
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		if raw == string(a) {
			return a
		}
		names[i] = string(a)
	}
	q.wrong.add(name, "must be one of "+strings.Join(names, ", "))
	return ""
}

// err is the problem for what was wrong, malformed parameters first.
func (q *query) err() error {
	if len(q.malformed) > 0 {
		p := problem("malformed_query", "malformed query parameters")
		if len(q.malformed) == 1 {
			p.Detail = q.malformed[0].Field + ": " + q.malformed[0].Message
		}
		p.Errors = q.malformed
		return p
	}
	return q.wrong.err()
}

const maxPageSize = 100

// list is how a list is paged: by page number, or by a cursor (keyset) that pages a list
// growing at its head without showing any row twice.
type list struct {
	kind    byte // which list a cursor belongs to
	account uuid.UUID
	scope   string // the filters a cursor was issued with
	codec   cursorCodec
}

// Page reads page and page_size, or cursor instead of page.
func (q *query) Page(l list) persistence.Page {
	p := persistence.Page{Size: q.Int("page_size", 20, 1, maxPageSize)}
	raw := q.raw("cursor")
	if raw == "" {
		p.Number = q.Int("page", 1, 1, 1<<31-1)
		return p
	}
	if q.raw("page") != "" {
		q.malformed.add("cursor", "page and cursor cannot be used together")
		return p
	}
	after, ok := l.codec.decode(raw, l)
	if !ok {
		q.malformed.add("cursor", "is not a cursor this list issued (malformed, altered, or another list's or account's)")
		return p
	}
	p.After = &after
	return p
}

// cursorCodec makes opaque cursors: the list, the last row id, and a MAC over both with the
// account and the filters. A cursor altered, or used by another account or with other filters,
// fails the MAC: it can never page into rows its holder was not listing.
type cursorCodec struct{ key []byte }

const cursorMAC = 16

func (c cursorCodec) mac(l list, last uuid.UUID) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte{l.kind})
	m.Write(l.account[:])
	m.Write(last[:])
	m.Write([]byte(l.scope))
	return m.Sum(nil)[:cursorMAC]
}

func (c cursorCodec) encode(l list, last uuid.UUID) string {
	b := make([]byte, 0, 1+16+cursorMAC)
	b = append(b, l.kind)
	b = append(b, last[:]...)
	b = append(b, c.mac(l, last)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (c cursorCodec) decode(s string, l list) (uuid.UUID, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 1+16+cursorMAC || b[0] != l.kind {
		return uuid.Nil, false
	}
	last := uuid.UUID(b[1:17])
	return last, hmac.Equal(b[17:], c.mac(l, last))
}

// Lists that page by cursor.
const (
	listMessages byte = iota + 1
	listTransactions
	listReview    // the operators' sender ID review queue (pages by number only)
	listContacts  // an account's active contacts
	listCampaigns // an account's campaigns (plain array; by cursor when page_size is given)
)

// list describes one of the account's lists for its cursors; filters are name=value pairs.
func (s *Server) list(kind byte, account uuid.UUID, filters ...string) list {
	return list{kind: kind, account: account, scope: strings.Join(filters, "&"), codec: cursorCodec{key: s.opts.CursorSecret}}
}

func optID(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}
