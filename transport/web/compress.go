package web

import (
	"bytes"
	"fmt"

	brrr "github.com/molecule-man/go-brrr"
)

// Brotli qualities: pages are compressed on every request, the embedded assets once at boot.
// Quality 9 on htmx.min.js gives 16.4 KB for 5 ms and 1.6 MB of scratch memory; 11 saves
// another 1 KB for 130 ms and 24 MB.
const (
	pageBrotli  = 4
	assetBrotli = 9
)

// brotli compresses body with a window no larger than the body itself. fasthttp's Brotli
// helpers keep a pooled encoder with the default 4 MB window for every level they have
// used; the best level's alone holds 120 MB of tables, which inflated the collector's goal
// for the whole life of the node (a node held 260 MB of heap before its first message).
func brotli(body []byte, quality int) ([]byte, error) {
	lgwin := 10 // the smallest window Brotli allows
	for lgwin < 24 && 1<<lgwin < len(body) {
		lgwin++
	}
	var buf bytes.Buffer
	buf.Grow(len(body)/3 + 64)
	w, err := brrr.NewWriterOptions(&buf, quality, brrr.WriterOptions{LGWin: lgwin, SizeHint: uint(len(body))})
	if err != nil {
		return nil, fmt.Errorf("brotli writer: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	return buf.Bytes(), nil
}
