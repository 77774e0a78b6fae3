package api

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// writeJSON sends v as the response body with the given status.
func writeJSON(rc *fasthttp.RequestCtx, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rc.Response.Header.SetContentType("application/json; charset=utf-8")
	rc.SetStatusCode(status)
	rc.SetBody(b)
	return nil
}

// kes is an amount in integer cents that the API shows as KES with two decimals. Arithmetic
// never happens in float; this type only formats.
type kes int64

func (k kes) MarshalJSON() ([]byte, error) {
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

// timestamp renders as RFC 3339 in UTC with a Z.
type timestamp time.Time

func (t timestamp) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 32)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// message is the body of endpoints whose only result is a sentence.
type message struct {
	Message string `json:"message"`
}
