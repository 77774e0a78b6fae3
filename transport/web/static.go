package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
)

//go:embed static/*.js static/*.css
var staticFiles embed.FS

//go:embed templates/*.html
var templateFiles embed.FS

// asset is one embedded file with its compressed forms, made once at boot.
type asset struct {
	contentType  string
	raw, gz, br  []byte
	hashedName   string // app.3f2a9c1b7d.css: the URL changes whenever the content does
	originalName string
}

// assets are the static files by their hashed names, and the hashed name of each file.
type assets struct {
	byHashed map[string]*asset
	url      map[string]string // app.css → /app/static/app.3f2a9c1b7d.css
}

func loadAssets() (*assets, error) {
	a := &assets{byHashed: map[string]*asset{}, url: map[string]string{}}
	err := fs.WalkDir(staticFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFiles.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Base(p)
		sum := sha256.Sum256(b)
		ext := path.Ext(name)
		hashed := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
		ct := mime.TypeByExtension(ext)
		if ct == "" {
			return fmt.Errorf("static/%s: no content type for %s", name, ext)
		}
		br, err := brotli(b, assetBrotli)
		if err != nil {
			return fmt.Errorf("static/%s: %w", name, err)
		}
		a.byHashed[hashed] = &asset{contentType: ct, raw: b, hashedName: hashed, originalName: name, br: br,
			gz: fasthttp.AppendGzipBytesLevel(nil, b, fasthttp.CompressBestCompression)}
		a.url[name] = "/app/static/" + hashed
		return nil
	})
	return a, err
}

// URL is the address of an embedded asset by its file name (a template's {{asset "app.css"}}).
func (a *assets) URL(name string) (string, error) {
	u, ok := a.url[name]
	if !ok {
		return "", fmt.Errorf("no static asset %q", name)
	}
	return u, nil
}

// serveAsset answers GET /app/static/{file}: cached for a year, since its name changes with
// its content; compressed as the browser accepts.
func (s *Site) serveAsset(_ context.Context, rc *fasthttp.RequestCtx) error {
	name, _ := rc.UserValue("file").(string)
	a, ok := s.assets.byHashed[name]
	if !ok {
		return api.NotFound("no such file")
	}
	rc.Response.Header.Set("Cache-Control", "public, max-age=31536000, immutable")
	rc.Response.Header.SetContentType(a.contentType)
	rc.Response.Header.Set("Vary", "Accept-Encoding")
	switch {
	case rc.Request.Header.HasAcceptEncoding("br"):
		rc.Response.Header.Set("Content-Encoding", "br")
		rc.SetBody(a.br)
	case rc.Request.Header.HasAcceptEncoding("gzip"):
		rc.Response.Header.Set("Content-Encoding", "gzip")
		rc.SetBody(a.gz)
	default:
		rc.SetBody(a.raw)
	}
	return nil
}

// writeCompressed sends body with the given status and type, compressed when the browser
// takes it and it is worth it. Server-Timing says how long the node took (app: up to the
// rendered page; total: compressed too), so a page's cost can be read apart from the network.
func writeCompressed(rc *fasthttp.RequestCtx, status int, contentType string, body []byte) {
	rendered := time.Since(rc.Time())
	defer func() {
		rc.Response.Header.Set("Server-Timing", fmt.Sprintf("app;dur=%.1f, total;dur=%.1f",
			float64(rendered)/float64(time.Millisecond), float64(time.Since(rc.Time()))/float64(time.Millisecond)))
	}()
	rc.SetStatusCode(status)
	rc.Response.Header.SetContentType(contentType)
	rc.Response.Header.Set("Vary", "Accept-Encoding")
	br := len(body) >= 1024 && rc.Request.Header.HasAcceptEncoding("br")
	var compressed []byte
	if br {
		var err error
		// A body that cannot be compressed goes out as it is (gzip or none) rather than fail.
		if compressed, err = brotli(body, pageBrotli); err != nil {
			br = false
		}
	}
	switch {
	case len(body) < 1024:
		rc.SetBody(body)
	case br:
		rc.Response.Header.Set("Content-Encoding", "br")
		rc.SetBody(compressed)
	case rc.Request.Header.HasAcceptEncoding("gzip"):
		rc.Response.Header.Set("Content-Encoding", "gzip")
		rc.SetBody(fasthttp.AppendGzipBytesLevel(nil, body, fasthttp.CompressDefaultCompression))
	default:
		rc.SetBody(bytes.Clone(body))
	}
}
