// Request bodies as streams: the server reads bodies over the prefetch size as streams, so a
// JSON body is bounded here (413 past TUMA_MAX_BODY_BYTES) and an upload is read part by part
// without ever holding it whole.

package api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// serverPrefetch is how much of a body fasthttp reads before the handler runs when it streams
// request bodies: the rest is still on the connection.
const serverPrefetch = 8 << 10

// streamed reports a request whose body is not all read yet (it may still be on the
// connection).
func streamed(rc *fasthttp.RequestCtx) bool {
	cl := rc.Request.Header.ContentLength()
	return cl == -1 || cl > serverPrefetch
}

// errBodyTooLarge is a body that went past its route's limit while being read.
var errBodyTooLarge = errors.New("request body too large")

// boundBody reads a non-upload request's body into memory, at most maxBody: a larger declared
// length is refused at once, a chunked body is read up to the limit. Read to its end, the body
// leaves nothing on the connection, whether the handler looks at it or not.
func boundBody(rc *fasthttp.RequestCtx, maxBody int) error {
	cl := rc.Request.Header.ContentLength()
	switch {
	case cl > maxBody:
		return tooLarge(rc, maxBody)
	case cl > serverPrefetch:
		rc.PostBody() // reads the rest of the declared length
		return nil
	case cl >= 0:
		return nil
	}
	stream := rc.RequestBodyStream()
	if stream == nil {
		return nil
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(stream, int64(maxBody)+1))
	if err != nil {
		return NewProblem("malformed_request", "the request body could not be read")
	}
	if n > int64(maxBody) {
		return tooLarge(rc, maxBody)
	}
	rc.Request.SetBodyRaw(buf.Bytes())
	return nil
}

// tooLarge is the 413 of a body past limit. The connection closes after the answer: the rest
// of the body is never read.
func tooLarge(rc *fasthttp.RequestCtx, limit int) error {
	rc.SetConnectionClose()
	return NewProblem("body_too_large", fmt.Sprintf("the request body is larger than %d bytes", limit))
}

// limited reads at most n bytes and then fails with errBodyTooLarge (not EOF: a body cut short
// must never parse as complete).
type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		if k, _ := l.r.Read(one[:]); k > 0 {
			return 0, errBodyTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// FormPart is one part of a multipart body, as the handler sees it.
type FormPart struct {
	Name     string // the form field
	FileName string // as the client named it: for messages only, never for storage
	Body     *bufio.Reader
}

// UploadWindow is how long an upload's body may take to arrive: the server's read timeout
// (30 s, from the request's start) is for requests, and a 50 MB file over a phone's
// connection takes minutes; cut off at 30 s it was a 400 that imported nothing.
const UploadWindow = 10 * time.Minute

// EachPart reads a multipart/form-data body of at most maxBody bytes as a stream and calls
// each for every part, in order; a part each does not read to its end is skipped. An error
// from each ends the reading (the connection then closes: the rest is never read). The body
// has UploadWindow to arrive.
func EachPart(rc *fasthttp.RequestCtx, maxBody int, each func(p FormPart) error) error {
	if c := rc.Conn(); c != nil {
		_ = c.SetReadDeadline(time.Now().Add(UploadWindow)) // the next request's read sets its own
	}
	mt, params, err := mime.ParseMediaType(string(rc.Request.Header.ContentType()))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return NewProblem("unsupported_media_type", "send the files as multipart/form-data")
	}
	if cl := rc.Request.Header.ContentLength(); cl > maxBody {
		return tooLarge(rc, maxBody)
	}
	var body io.Reader = rc.RequestBodyStream()
	if body == nil {
		body = bytes.NewReader(rc.PostBody())
	}
	mr := multipart.NewReader(&limited{r: body, n: int64(maxBody)}, params["boundary"])
	for {
		part, err := mr.NextPart()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errBodyTooLarge):
			return tooLarge(rc, maxBody)
		case err != nil:
			rc.SetConnectionClose()
			return NewProblem("malformed_multipart", "the multipart body could not be read: "+strings.TrimPrefix(err.Error(), "multipart: "))
		}
		pr := &partReader{r: part}
		perr := each(FormPart{Name: part.FormName(), FileName: part.FileName(), Body: bufio.NewReaderSize(pr, 4096)})
		part.Close()
		if perr != nil {
			rc.SetConnectionClose()
			switch {
			case errors.Is(perr, errBodyTooLarge), errors.Is(pr.err, errBodyTooLarge):
				return tooLarge(rc, maxBody)
			case pr.err != nil && !errors.Is(pr.err, io.EOF):
				// The body itself was bad (cut short, a broken boundary), whatever the
				// handler made of it.
				return NewProblem("malformed_multipart", "the multipart body could not be read: a part ends early")
			}
			return perr
		}
	}
}

// uploadRoute is a route whose body is streamed to its handler, with the largest body it takes.
type uploadRoute struct {
	method string
	path   string
	limit  int
}

// uploadLimit is a registered route's upload limit (0 for routes with JSON or no bodies).
func (s *Server) uploadLimit(method, route string) int {
	for _, u := range s.uploads {
		if u.method == method && u.path == route {
			return u.limit
		}
	}
	return 0
}

// partReader remembers the error reading a part ended with, to tell a bad body from a
// handler's own failure.
type partReader struct {
	r   io.Reader
	err error
}

func (p *partReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n, err
}
