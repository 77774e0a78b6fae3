// Uploads: pages whose forms send files, read part by part as they arrive, never whole.

package web

import (
	"context"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// tokenInBodyKey marks an upload whose CSRF token is still to be read, from its body.
const tokenInBodyKey = "tuma.web.token_in_body"

// Parts reads an upload's parts in order and calls each for every one but the form's CSRF
// token. It fails with a 403 problem, before any file is read, unless the token came first.
type Parts func(each func(p api.FormPart) error) error

// UploadHandler is an upload page: it reads the form's parts with parts.
type UploadHandler func(ctx context.Context, rc *fasthttp.RequestCtx, parts Parts) error

// Upload registers a signed-in page whose form sends files: multipart/form-data of at most
// limit bytes, streamed to h. The chain cannot read the form's CSRF token without reading
// the files, so the token must be the form's first field ({{template "csrf" .CSRF}} before
// the file inputs: browsers send the parts in document order) and parts checks it before
// anything else is read; htmx's X-CSRF-Token header is checked as on any page.
func (r *Router) Upload(method, path string, limit int, h UploadHandler) {
	r.api.UploadPage(method, path, api.Page, uploadGate{r.site}, limit, func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		err := h(ctx, rc, uploadParts(rc, limit))
		drain(rc, limit) // a refusal (an error page, or the form shown again) may leave some unread
		return err
	})
}

// uploadGate admits the requests of upload pages as Site does, leaving a form's token in
// its body.
type uploadGate struct{ *Site }

func (g uploadGate) Admit(ctx context.Context, rc *fasthttp.RequestCtx, acc api.Access) (auth.Principal, error) {
	return g.admit(ctx, rc, acc, true)
}

// uploadParts reads rc's parts, the CSRF token first when Admit left it in the body.
func uploadParts(rc *fasthttp.RequestCtx, limit int) Parts {
	return func(each func(p api.FormPart) error) error {
		pending, _ := rc.UserValue(tokenInBodyKey).(bool)
		err := api.EachPart(rc, limit, func(p api.FormPart) error {
			switch {
			case p.Name == csrfField && pending:
				ws, _ := currentSession(rc)
				token, err := io.ReadAll(io.LimitReader(p.Body, 128))
				if err != nil || !tokenMatches(string(token), ws.CSRF) {
					return csrfRefused()
				}
				pending = false
				rc.SetUserValue(tokenInBodyKey, false)
				return nil
			case p.Name == csrfField:
				return nil
			case pending: // a part before the token: nothing of the form is looked at
				return csrfRefused()
			}
			return each(p)
		})
		if err == nil && pending {
			return csrfRefused()
		}
		return err
	}
}

// drain reads what is left of an upload's body (at most limit bytes): a browser still sending
// a refused one then gets the answer rather than a reset connection.
func drain(rc *fasthttp.RequestCtx, limit int) {
	if s := rc.RequestBodyStream(); s != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(s, int64(limit)))
	}
}
