// The parts most page groups hold.

package web

import (
	"context"
	"io/fs"

	"github.com/google/uuid"
)

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

// Owned are the JSON API's operations on a resource an account owns, by id: T as stored,
// written from the API's input I. Page groups of such resources embed it in theirs.
type Owned[T, I any] interface {
	List(ctx context.Context, accountID uuid.UUID) ([]T, error)
	Get(ctx context.Context, accountID, id uuid.UUID) (T, error)
	Update(ctx context.Context, accountID, id uuid.UUID, in I) (T, error)
	Delete(ctx context.Context, accountID, id uuid.UUID) error
}
