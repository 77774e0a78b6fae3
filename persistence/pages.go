// Pages: how list queries are cut into pages.

package persistence

import "github.com/google/uuid"

// Page selects a page of a list, newest first: by number (1-based), or after a row (keyset),
// which pages a list growing at its head without showing a row twice.
type Page struct {
	Number, Size int
	After        *uuid.UUID // when set: the rows older than this one; Number is ignored
}

func (p Page) offset() int {
	if p.After != nil {
		return 0
	}
	return (p.Number - 1) * p.Size
}
