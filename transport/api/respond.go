// Responses: JSON bodies, the API's amounts and times, redirects, and path parameters.

package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
)

// WriteJSON sends v as the response body with the given status.
func WriteJSON(rc *fasthttp.RequestCtx, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	WriteJSONBody(rc, status, b)
	return nil
}

// WriteJSONBody sends body, JSON already, with the given status.
func WriteJSONBody(rc *fasthttp.RequestCtx, status int, body []byte) {
	rc.Response.Header.SetContentType("application/json; charset=utf-8")
	rc.SetStatusCode(status)
	rc.SetBody(body)
}

// KES is an amount in integer cents that the API shows as KES with two decimals. Arithmetic
// never happens in float; this type only formats.
type KES int64

// MarshalJSON writes the amount as a number with two decimals.
func (k KES) MarshalJSON() ([]byte, error) {
	neg := k < 0
	if neg {
		k = -k
	}
	b := make([]byte, 0, 24)
	if neg {
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, int64(k)/100, 10)
	c := int64(k) % 100
	b = append(b, '.', byte('0'+c/10), byte('0'+c%10))
	return b, nil
}

// String is the amount as MarshalJSON writes it.
func (k KES) String() string { b, _ := k.MarshalJSON(); return string(b) }

// Timestamp renders as RFC 3339 in UTC with a Z.
type Timestamp time.Time

// MarshalJSON writes the time, or null for the zero time.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 32)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// TimestampOf is an optional time as the API renders it (nil stays nil: null).
func TimestampOf(t *time.Time) *Timestamp {
	if t == nil {
		return nil
	}
	ts := Timestamp(*t)
	return &ts
}

// Message is the body of endpoints whose only result is a sentence.
type Message struct {
	Message string `json:"message"`
}

// SeeOther answers 303 to target: where browser flows (verification, checkout, the payer's
// return) send the browser on.
func SeeOther(rc *fasthttp.RequestCtx, target string) error {
	rc.Response.Header.Set("Location", target)
	rc.Response.Header.SetContentType("text/plain; charset=utf-8")
	rc.SetStatusCode(http.StatusSeeOther)
	rc.SetBodyString("See " + target + "\n")
	return nil
}

// WithQuery adds an encoded query to a URL, after any query it already has.
func WithQuery(base, query string) string {
	if strings.Contains(base, "?") {
		return base + "&" + query
	}
	return base + "?" + query
}

// PathID parses a UUID path parameter; anything else is simply not found.
func PathID(rc *fasthttp.RequestCtx, name string) (uuid.UUID, error) {
	s, _ := rc.UserValue(name).(string)
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, NotFound("no such " + name)
	}
	return id, nil
}
