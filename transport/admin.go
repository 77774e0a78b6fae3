package transport

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
)

// adminAccountJSON is the operator's view of an account.
type adminAccountJSON struct {
	userJSON
	Status string `json:"status"`
}

// pathID parses a UUID path parameter; anything else is simply not found.
func pathID(rc *fasthttp.RequestCtx, name string) (uuid.UUID, error) {
	s, _ := rc.UserValue(name).(string)
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, notFound("no such " + name)
	}
	return id, nil
}

func (s *Server) setAccountStatus(status string) handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		id, err := pathID(rc, "id")
		if err != nil {
			return err
		}
		a, err := s.Accounts.SetStatus(ctx, id, status)
		if err != nil {
			return err
		}
		// Every node's cache learns at once, so the account's keys and tokens stop (or start)
		// working everywhere on the next request.
		s.Principals.SetAccountStatus(ctx, id.String(), status)
		return writeJSON(rc, http.StatusOK, adminAccountJSON{userJSON: newUserJSON(a), Status: a.Status})
	}
}
