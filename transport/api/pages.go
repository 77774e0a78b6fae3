package api

import (
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// envelope is the spec's pagination envelope.
// Beyond the spec, next_cursor continues the list after this page's last row (null at its
// end), and page is 0 for a page read by cursor.
type envelope[T any] struct {
	Data       []T     `json:"data"`
	Total      int64   `json:"total"`
	Page       int     `json:"page"`
	PageSize   int     `json:"page_size"`
	Pages      int64   `json:"pages"`
	NextCursor *string `json:"next_cursor"`
}

// newEnvelope wraps a page; lastID is the id of its last row, for the next cursor.
func newEnvelope[T any](data []T, total int64, p persistence.Page, l list, lastID func(T) uuid.UUID) envelope[T] {
	if data == nil {
		data = []T{}
	}
	pages := (total + int64(p.Size) - 1) / int64(p.Size)
	e := envelope[T]{Data: data, Total: total, Page: p.Number, PageSize: p.Size, Pages: pages}
	if len(data) == p.Size && len(data) > 0 {
		c := l.codec.encode(l, lastID(data[len(data)-1]))
		e.NextCursor = &c
	}
	return e
}
