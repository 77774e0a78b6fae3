package web

import (
	"context"
	"net/http"

	"github.com/valyala/fasthttp"
)

// Coming is a placeholder for a page not built yet, so the navigation has somewhere to go:
// a signed-in GET of path says the page is coming. Each is replaced by its page group.
func (s *Site) Coming(path, title string) Group {
	return GroupFunc(func(r *Router) {
		r.Page("GET", path, func(ctx context.Context, rc *fasthttp.RequestCtx) error {
			return s.views.Render(ctx, rc, http.StatusOK, "coming", &Page{Title: title, Nav: path})
		})
	})
}
