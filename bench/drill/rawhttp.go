package drill

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// rawConn is one HTTP/1.1 request written by hand on its own TCP connection, for what
// net/http will not do: a body larger than its Content-Length lets the server refuse
// before the body is read (the answer is read whatever happens to the writes), and a request
// written in two halves with a pause between (a request in flight when a node is told to stop).
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

// dialRaw connects to a node's base URL (http://host:port).
func dialRaw(ctx context.Context, base string) (*rawConn, error) {
	addr := strings.TrimPrefix(base, "http://")
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, br: bufio.NewReader(c)}, nil
}

// rawHead renders a request line and headers (name, value pairs), ending the header block.
func rawHead(method, path string, headers ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: drill\r\n", method, path)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func (r *rawConn) write(b []byte) error {
	_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := r.c.Write(b)
	return err
}

// response reads the answer, waiting up to limit. A connection closed or reset before a
// whole answer arrived is status 0 with the error.
func (r *rawConn) response(method string, limit time.Duration) reply {
	start := time.Now()
	_ = r.c.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(r.br, &http.Request{Method: method})
	if err != nil {
		return reply{err: err, took: time.Since(start), written: true}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	out := reply{status: resp.StatusCode, header: resp.Header, body: body, took: time.Since(start), written: true}
	if err != nil {
		out.status, out.err = 0, err
	}
	return out
}

func (r *rawConn) close() { r.c.Close() }

// oversized sends head and then streams body while reading the answer, which a server may
// give before it has read the body (and then close the connection under the writer).
func oversized(ctx context.Context, base, method string, head []byte, body io.Reader) reply {
	rc, err := dialRaw(ctx, base)
	if err != nil {
		return reply{err: err}
	}
	defer rc.close()
	if err := rc.write(head); err != nil {
		return reply{err: err}
	}
	go func() {
		_ = rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(rc.c, body) // the server may stop reading: its answer is what counts
	}()
	return rc.response(method, 10*time.Second)
}

// chunks is a chunked transfer encoding of n bytes of filler, in 16 KiB chunks.
type chunks struct {
	left   int
	done   bool
	buf    bytes.Buffer
	prefix []byte // sent first, in the first chunk (a multipart part's head)
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.buf.Len() == 0 {
		switch {
		case len(c.prefix) > 0:
			fmt.Fprintf(&c.buf, "%x\r\n%s\r\n", len(c.prefix), c.prefix)
			c.prefix = nil
		case c.left > 0:
			n := min(c.left, 16<<10)
			c.left -= n
			fmt.Fprintf(&c.buf, "%x\r\n%s\r\n", n, bytes.Repeat([]byte("a"), n))
		case !c.done:
			c.done = true
			c.buf.WriteString("0\r\n\r\n")
		default:
			return 0, io.EOF
		}
	}
	return c.buf.Read(p)
}
