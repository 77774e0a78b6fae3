// The API reference: /openapi.json (the public contract) and the explorer at /docs.

package api

import (
	"context"
	_ "embed"
	"io/fs"
	"strings"

	swaggerfiles "github.com/swaggo/files/v2"
	"github.com/valyala/fasthttp"
)

//go:embed openapi.json
var openAPIDocument []byte

//go:embed docs/index.html
var docsPage []byte

// ServeOpenAPI serves /openapi.json.
func ServeOpenAPI(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("application/json; charset=utf-8")
	rc.SetBody(openAPIDocument)
	return nil
}

// ServeDocs serves the explorer's page, /docs.
func ServeDocs(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("text/html; charset=utf-8")
	rc.SetBody(docsPage)
	return nil
}

// ServeDocsAsset serves the embedded Swagger UI files ({filepath} under /docs/), so the
// explorer works offline.
func ServeDocsAsset(_ context.Context, rc *fasthttp.RequestCtx) error {
	name, _ := rc.UserValue("filepath").(string)
	b, err := fs.ReadFile(swaggerfiles.FS, name)
	if err != nil {
		return NotFound("no such file")
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		rc.Response.Header.SetContentType("text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		rc.Response.Header.SetContentType("text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".png"):
		rc.Response.Header.SetContentType("image/png")
	case strings.HasSuffix(name, ".html"):
		rc.Response.Header.SetContentType("text/html; charset=utf-8")
	default:
		rc.Response.Header.SetContentType("application/octet-stream")
	}
	rc.Response.Header.Set("Cache-Control", "public, max-age=86400")
	rc.SetBody(b)
	return nil
}
