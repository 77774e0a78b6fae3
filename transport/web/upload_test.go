package web

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// An upload's parts reach the page only after the form's token, its first field, matched
// the session's; a missing, wrong or late token is a 403 before any file is read.
func TestUploadPartsCheckTheTokenFirst(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	good := encodeToken(secret)
	type field struct{ name, value string }
	for _, c := range []struct {
		name     string
		fields   []field
		inBody   bool // Admit left the token in the body (no X-CSRF-Token header)
		wantRead []string
		refused  bool
	}{
		{"token first", []field{{"_csrf", good}, {"doc", "%PDF-"}, {"other", "x"}}, true, []string{"doc", "other"}, false},
		{"wrong token", []field{{"_csrf", encodeToken(bytes.Repeat([]byte{8}, 32))}, {"doc", "%PDF-"}}, true, nil, true},
		{"garbage token", []field{{"_csrf", "<script>"}, {"doc", "%PDF-"}}, true, nil, true},
		{"token after a file", []field{{"doc", "%PDF-"}, {"_csrf", good}}, true, nil, true},
		{"no token", []field{{"doc", "%PDF-"}}, true, nil, true},
		{"empty form", nil, true, nil, true},
		{"header checked", []field{{"doc", "%PDF-"}, {"_csrf", "ignored"}}, false, []string{"doc"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body bytes.Buffer
			w := multipart.NewWriter(&body)
			for _, f := range c.fields {
				if err := w.WriteField(f.name, f.value); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			rc := &fasthttp.RequestCtx{}
			rc.Request.Header.SetMethod("POST")
			rc.Request.Header.SetContentType(w.FormDataContentType())
			rc.Request.SetBody(body.Bytes())
			rc.SetUserValue(sessionKey, persistence.WebSession{CSRF: secret})
			rc.SetUserValue(tokenInBodyKey, c.inBody)
			var read []string
			err := uploadParts(rc, 1<<20)(func(p api.FormPart) error {
				if _, err := io.Copy(io.Discard, p.Body); err != nil {
					return err
				}
				read = append(read, p.Name)
				return nil
			})
			var prob *api.Problem
			refused := errors.As(err, &prob) && prob.Status == http.StatusForbidden
			if refused != c.refused || (!c.refused && err != nil) {
				t.Fatalf("err = %v; want refused %v", err, c.refused)
			}
			if len(read) != len(c.wantRead) || (len(read) > 0 && read[0] != c.wantRead[0]) {
				t.Errorf("the page read %v; want %v", read, c.wantRead)
			}
		})
	}
}
