// Pages: how list queries are cut into pages.

package persistence

// Page selects a page of a list (1-based).
type Page struct {
	Number, Size int
}

func (p Page) offset() int { return (p.Number - 1) * p.Size }
