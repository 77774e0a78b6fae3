package web

import (
	"context"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// UploadHandler serves an upload page. parts reads the multipart body as a stream, part by
// part in order, after the form's CSRF token has been checked: the handler changes nothing
// before parts has run.
type UploadHandler func(ctx context.Context, rc *fasthttp.RequestCtx, parts Parts) error

// Parts reads a multipart body's parts in order, calling each for every one but the CSRF
// token's.
type Parts func(each func(api.FormPart) error) error

// csrfInBodyKey marks an upload whose token is to be its body's first part.
const csrfInBodyKey = "tuma.web.csrf-in-body"

// Upload registers a signed-in page whose body, multipart and at most limit bytes, is
// streamed to h: never held whole. Its CSRF token is the X-CSRF-Token header (htmx), or
// else the form's first part: a form puts its hidden _csrf input before its file input
// (browsers send parts in document order), and parts refuses the upload (403) otherwise.
func (r *Router) Upload(method, path string, limit int, h UploadHandler) {
	r.api.UploadPage(method, path, api.Page, uploadPages{r.site}, limit, func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		return h(ctx, rc, func(each func(api.FormPart) error) error { return eachPart(rc, limit, each) })
	})
}

// uploadPages admits the callers of upload pages (api.Pages).
type uploadPages struct{ *Site }

func (u uploadPages) Admit(ctx context.Context, rc *fasthttp.RequestCtx, acc api.Access) (auth.Principal, error) {
	return u.admit(ctx, rc, acc, true)
}

// eachPart reads an upload's parts; when the token is the body's, the first part must be
// it, and match, before any other part is read.
func eachPart(rc *fasthttp.RequestCtx, limit int, each func(api.FormPart) error) error {
	pending, _ := rc.UserValue(csrfInBodyKey).(bool)
	ws, _ := currentSession(rc)
	return api.EachPart(rc, limit, func(p api.FormPart) error {
		if pending {
			pending = false
			if p.Name != csrfField {
				return csrfRefused()
			}
			token, err := io.ReadAll(io.LimitReader(p.Body, 128))
			if err != nil || !tokenMatches(string(token), ws.CSRF) {
				return csrfRefused()
			}
			return nil
		}
		if p.Name == csrfField {
			return nil
		}
		return each(p)
	})
}
