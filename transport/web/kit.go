// The parts most page groups hold.

package web

import "io/fs"

// Kit is what a page group usually holds: the site, its own views, the JSON API's operations
// it runs (O) and the reads it makes (S). Groups embed it.
type Kit[O, S any] struct {
	Site  *Site
	Views *Views
	Ops   O
	Store S
}

// NewKit loads a group's templates into its views.
func NewKit[O, S any](site *Site, templates fs.FS, ops O, store S) (Kit[O, S], error) {
	v, err := site.Views(templates)
	if err != nil {
		return Kit[O, S]{}, err
	}
	return Kit[O, S]{Site: site, Views: v, Ops: ops, Store: store}, nil
}
