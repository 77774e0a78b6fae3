package transport

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
)

const maxPageSize = 100

// envelope is the spec's pagination envelope.
type envelope[T any] struct {
	Data     []T   `json:"data"`
	Total    int64 `json:"total"`
	Page     int   `json:"page"`
	PageSize int   `json:"page_size"`
	Pages    int64 `json:"pages"`
}

func newEnvelope[T any](data []T, total int64, p persistence.Page) envelope[T] {
	if data == nil {
		data = []T{}
	}
	pages := (total + int64(p.Size) - 1) / int64(p.Size)
	return envelope[T]{Data: data, Total: total, Page: p.Number, PageSize: p.Size, Pages: pages}
}

// parsePage reads page (≥ 1, default 1) and page_size (1–100, default 20).
func parsePage(rc *fasthttp.RequestCtx, fe *fieldErrors) persistence.Page {
	return persistence.Page{
		Number: queryInt(rc, fe, "page", 1, 1, 1<<31-1),
		Size:   queryInt(rc, fe, "page_size", 20, 1, maxPageSize),
	}
}

func queryInt(rc *fasthttp.RequestCtx, fe *fieldErrors, name string, def, lo, hi int) int {
	raw := rc.QueryArgs().Peek(name)
	if len(raw) == 0 {
		return def
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < lo || n > hi {
		fe.add(name, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return def
	}
	return n
}
