// Query parameters: reading them, and telling malformed ones (400) from out-of-range ones
// (422).

package api

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/strictjson"
)

// Query reads a request's query parameters. A value that is not of its kind at all
// (page=abc) is malformed: 400, as CONTRACT §1 says. A well-formed value outside what the
// parameter allows (page_size=500, status=unknown) is invalid: 422. Err reports them all.
type Query struct {
	rc               *fasthttp.RequestCtx
	malformed, wrong FieldErrors
}

// NewQuery reads rc's query parameters.
func NewQuery(rc *fasthttp.RequestCtx) *Query { return &Query{rc: rc} }

// Text is a parameter's text ("" when absent); text no store can hold (a NUL, invalid UTF-8)
// is malformed.
func (q *Query) Text(name string) string {
	v := string(q.rc.QueryArgs().Peek(name))
	if !strictjson.Storable(v) {
		q.malformed.Add(name, "must be text without NUL bytes, in UTF-8")
		return ""
	}
	return v
}

// Malformed records a parameter that is not of its kind (400).
func (q *Query) Malformed(name, msg string) { q.malformed.Add(name, msg) }

// Invalid records a parameter outside what it allows (422).
func (q *Query) Invalid(name, msg string) { q.wrong.Add(name, msg) }

// Int reads an integer parameter in [lo, hi], def when absent.
func (q *Query) Int(name string, def, lo, hi int) int {
	raw := q.Text(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	switch {
	case err != nil:
		q.malformed.Add(name, "must be an integer")
	case n < lo || n > hi:
		q.wrong.Add(name, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	default:
		return n
	}
	return def
}

// IntIn reads an integer parameter that must be one of allowed, def when absent.
func (q *Query) IntIn(name string, def int, allowed ...int) int {
	n := q.Int(name, def, math.MinInt, math.MaxInt)
	if slices.Contains(allowed, n) {
		return n
	}
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = strconv.Itoa(a)
	}
	q.wrong.Add(name, "must be one of "+strings.Join(words, ", "))
	return def
}

// UUID reads an optional UUID parameter.
func (q *Query) UUID(name string) *uuid.UUID {
	raw := q.Text(name)
	if raw == "" {
		return nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		q.malformed.Add(name, "must be a UUID")
		return nil
	}
	return &id
}

// Enum reads an optional parameter that must be one of allowed ("" when absent or wrong).
func Enum[T ~string](q *Query, name string, allowed ...T) T {
	raw := q.Text(name)
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
	q.wrong.Add(name, "must be one of "+strings.Join(names, ", "))
	return ""
}

// Err is the problem for what was wrong, malformed parameters first.
func (q *Query) Err() error {
	if len(q.malformed) > 0 {
		p := NewProblem("malformed_query", "malformed query parameters")
		if len(q.malformed) == 1 {
			p.Detail = q.malformed[0].Field + ": " + q.malformed[0].Message
		}
		p.Errors = q.malformed
		return p
	}
	return q.wrong.Err()
}

const maxPageSize = 100

// Page reads page and page_size, or cursor instead of page.
func (q *Query) Page(l List) persistence.Page {
	p := persistence.Page{Size: q.Int("page_size", 20, 1, maxPageSize)}
	raw := q.Text("cursor")
	if raw == "" {
		p.Number = q.Int("page", 1, 1, 1<<31-1)
		return p
	}
	if q.Text("page") != "" {
		q.malformed.Add("cursor", "page and cursor cannot be used together")
		return p
	}
	after, ok := l.decode(raw)
	if !ok {
		q.malformed.Add("cursor", "is not a cursor this list issued (malformed, altered, or another list's or account's)")
		return p
	}
	p.After = &after
	return p
}
