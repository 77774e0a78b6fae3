package api

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// multipartCtx is a request carrying body as multipart/form-data with boundary.
func multipartCtx(body []byte, boundary string) *fasthttp.RequestCtx {
	rc := &fasthttp.RequestCtx{}
	rc.Request.Header.SetMethod("POST")
	rc.Request.Header.SetContentType("multipart/form-data; boundary=" + boundary)
	rc.Request.SetBody(body)
	return rc
}

func TestEachPartReadsEveryPartAndBoundsTheBody(t *testing.T) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range []string{"one", "two"} {
		p, _ := w.CreateFormFile(f, f+".bin")
		p.Write([]byte(strings.Repeat(f, 100)))
	}
	w.Close()
	var names []string
	var sizes []int
	err := EachPart(multipartCtx(b.Bytes(), w.Boundary()), 1<<20, func(p FormPart) error {
		data := new(bytes.Buffer)
		data.ReadFrom(p.Body)
		names, sizes = append(names, p.Name), append(sizes, data.Len())
		return nil
	})
	if err != nil || strings.Join(names, ",") != "one,two" || sizes[0] != 300 || sizes[1] != 300 {
		t.Fatalf("parts %v of %v, err %v", names, sizes, err)
	}
	// The same body with a limit under its size: 413, whatever reads it.
	err = EachPart(multipartCtx(b.Bytes(), w.Boundary()), 100, func(p FormPart) error {
		_, err := new(bytes.Buffer).ReadFrom(p.Body)
		return err
	})
	if p := problemFor(err); p.Status != 413 {
		t.Errorf("a body over the limit: %v; want 413", err)
	}
	// Not multipart: 415.
	rc := &fasthttp.RequestCtx{}
	rc.Request.Header.SetContentType("application/json")
	if p := problemFor(EachPart(rc, 1<<20, func(FormPart) error { return nil })); p.Status != 415 {
		t.Errorf("JSON to an upload: %d; want 415", p.Status)
	}
}

// Any body: eachPart never panics, reads no more than the limit, and fails only with a
// problem of its own catalogue (400 malformed, 413, 415) or the callback's.
func FuzzEachPart(f *testing.F) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	p, _ := w.CreateFormFile("kra_pin", "x.pdf")
	p.Write([]byte("%PDF-1.4 data"))
	w.Close()
	f.Add(b.Bytes(), w.Boundary())
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b--\r\n"), "b")
	f.Add([]byte("--b\r\n\r\n"), "b")
	f.Add([]byte(""), "b")
	f.Fuzz(func(t *testing.T, body []byte, boundary string) {
		if boundary == "" || !utf8.ValidString(boundary) || strings.ContainsAny(boundary, "\"\r\n;=") || len(boundary) > 70 {
			return
		}
		read := 0
		err := EachPart(multipartCtx(body, boundary), 4096, func(p FormPart) error {
			n, err := new(bytes.Buffer).ReadFrom(p.Body)
			read += int(n)
			return err
		})
		if read > 4096 {
			t.Fatalf("read %d bytes of parts with a limit of 4096", read)
		}
		if err != nil {
			switch pr := problemFor(err); pr.Code {
			case "malformed_multipart", "body_too_large", "unsupported_media_type":
			default:
				t.Fatalf("error %v became %d %s", err, pr.Status, pr.Code)
			}
		}
	})
}
