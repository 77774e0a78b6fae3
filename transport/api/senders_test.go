package api

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

func TestNormaliseSenderName(t *testing.T) {
	tests := []struct{ in, want, problem string }{
		{"acme", "ACME", ""},
		{" Acme  Shop ", "ACMESHOP", ""},
		{"ab", "AB", ""},
		{"ABCDEFGHIJK", "ABCDEFGHIJK", ""},
		{"a", "", "2 to 11"},
		{"   ", "", "2 to 11"},
		{"ABCDEFGHIJKL", "", "2 to 11"},
		{"ACME-SHOP", "", "letters and digits"},
		{"ÄCME", "", "letters and digits"},
		{"ACME\x00", "", "letters and digits"},
		{"123", "123", ""},
	}
	for _, tt := range tests {
		got, msg := normaliseSenderName(tt.in)
		if got != tt.want || (tt.problem == "") != (msg == "") || !strings.Contains(msg, tt.problem) {
			t.Errorf("normaliseSenderName(%q) = %q, %q; want %q and a problem with %q", tt.in, got, msg, tt.want, tt.problem)
		}
	}
}

// Whatever comes in, a name that passes is 2 to 11 upper-case letters and digits.
func FuzzNormaliseSenderName(f *testing.F) {
	for _, s := range []string{"acme", " Acme  Shop ", "a", "ÄCME", "ACME-SHOP", "\x00\xff", strings.Repeat("a ", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name, msg := normaliseSenderName(in)
		if msg != "" {
			if name != "" {
				t.Fatalf("%q refused (%s) but named %q", in, msg, name)
			}
			return
		}
		if len(name) < 2 || len(name) > 11 || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
			t.Fatalf("%q gave %q", in, name)
		}
	})
}

func TestDocumentTypeByContent(t *testing.T) {
	for head, want := range map[string]string{
		"%PDF-1.7\n":            "application/pdf",
		"\x89PNG\r\n\x1a\n\x00": "image/png",
		"\xFF\xD8\xFF\xE1":      "image/jpeg",
		"GIF89a":                "",
		"%PD":                   "",
		"hello.pdf":             "",
		"":                      "",
	} {
		if got := documentType([]byte(head)); got != want {
			t.Errorf("documentType(%q) = %q; want %q", head, got, want)
		}
	}
}

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
	err := eachPart(multipartCtx(b.Bytes(), w.Boundary()), 1<<20, func(p formPart) error {
		data := new(bytes.Buffer)
		data.ReadFrom(p.Body)
		names, sizes = append(names, p.Name), append(sizes, data.Len())
		return nil
	})
	if err != nil || strings.Join(names, ",") != "one,two" || sizes[0] != 300 || sizes[1] != 300 {
		t.Fatalf("parts %v of %v, err %v", names, sizes, err)
	}
	// The same body with a limit under its size: 413, whatever reads it.
	err = eachPart(multipartCtx(b.Bytes(), w.Boundary()), 100, func(p formPart) error {
		_, err := new(bytes.Buffer).ReadFrom(p.Body)
		return err
	})
	if p := problemFor(err); p.Status != 413 {
		t.Errorf("a body over the limit: %v; want 413", err)
	}
	// Not multipart: 415.
	rc := &fasthttp.RequestCtx{}
	rc.Request.Header.SetContentType("application/json")
	if p := problemFor(eachPart(rc, 1<<20, func(formPart) error { return nil })); p.Status != 415 {
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
		err := eachPart(multipartCtx(body, boundary), 4096, func(p formPart) error {
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
