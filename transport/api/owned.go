// Handlers of a resource an account owns, read and written by id: each runs its operation for
// the caller's account only (another account's id is simply not found) and answers in the
// JSON shape view gives. The path parameter is "id".

package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
)

// ListOwned answers with every resource of the caller's account.
func ListOwned[T, J any](list func(ctx context.Context, accountID uuid.UUID) ([]T, error), view func(T) J) Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		items, err := list(ctx, Principal(rc).AccountID)
		if err != nil {
			return err
		}
		out := make([]J, len(items))
		for i, it := range items {
			out[i] = view(it)
		}
		return WriteJSON(rc, http.StatusOK, out)
	}
}

// GetOwned answers with one resource of the caller's account.
func GetOwned[T, J any](get func(ctx context.Context, accountID, id uuid.UUID) (T, error), view func(T) J) Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		id, err := PathID(rc, "id")
		if err != nil {
			return err
		}
		it, err := get(ctx, Principal(rc).AccountID, id)
		if err != nil {
			return err
		}
		return WriteJSON(rc, http.StatusOK, view(it))
	}
}

// UpdateOwned applies the request's JSON body (decoded strictly into I) to one resource of the
// caller's account and answers with the resource as it is now.
func UpdateOwned[I, T, J any](update func(ctx context.Context, accountID, id uuid.UUID, in I) (T, error), view func(T) J) Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		id, err := PathID(rc, "id")
		if err != nil {
			return err
		}
		var in I
		if err := DecodeJSON(rc, &in); err != nil {
			return err
		}
		it, err := update(ctx, Principal(rc).AccountID, id, in)
		if err != nil {
			return err
		}
		return WriteJSON(rc, http.StatusOK, view(it))
	}
}

// DeleteOwned deletes one resource of the caller's account: 204.
func DeleteOwned(del func(ctx context.Context, accountID, id uuid.UUID) error) Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		id, err := PathID(rc, "id")
		if err != nil {
			return err
		}
		if err := del(ctx, Principal(rc).AccountID, id); err != nil {
			return err
		}
		rc.SetStatusCode(http.StatusNoContent)
		return nil
	}
}
