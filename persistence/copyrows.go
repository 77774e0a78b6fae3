// Copy rows: a batch of rows in PostgreSQL's binary COPY format, written by hand for the
// bulk writes (contact imports, message expansion, provider ids). pgx's CopyFrom looks up an
// encoder for every value it is given (by type, by reflection): a third of the Go CPU of a
// million-row import, 6% of the node's in bulk dispatch. These rows are a few fixed types.

package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// copyHeader opens a binary COPY stream: the signature, no flags, no header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyRows is a batch of rows being written; reuse it with reset.
type copyRows struct {
	buf     bytes.Buffer
	n       int64
	scratch [8]byte
}

func (c *copyRows) reset() {
	c.buf.Reset()
	c.buf.Write(copyHeader)
	c.n = 0
}

// grow makes room for about n more bytes at once: a batch grown by doubling allocated its
// size again over, in the receipts' hot path.
func (c *copyRows) grow(n int) { c.buf.Grow(n) }

// row starts a row of n fields.
func (c *copyRows) row(n int) {
	c.buf.Write(binary.BigEndian.AppendUint16(c.scratch[:0], uint16(n)))
	c.n++
}

func (c *copyRows) uuid(u uuid.UUID) {
	c.buf.Write([]byte{0, 0, 0, 16})
	c.buf.Write(u[:])
}

// optUUID writes u, or NULL when it is nil.
func (c *copyRows) optUUID(u *uuid.UUID) {
	if u == nil {
		c.null()
		return
	}
	c.uuid(*u)
}

func (c *copyRows) null() { c.buf.Write([]byte{0xff, 0xff, 0xff, 0xff}) }

// text writes s, which must be UTF-8 without NUL (the server refuses anything else).
func (c *copyRows) text(s string) {
	c.buf.Write(binary.BigEndian.AppendUint32(c.scratch[:0], uint32(len(s))))
	c.buf.WriteString(s)
}

// optText writes *s, or NULL when s is nil.
func (c *copyRows) optText(s *string) {
	if s == nil {
		c.null()
		return
	}
	c.text(*s)
}

func (c *copyRows) bool(v bool) {
	b := byte(0)
	if v {
		b = 1
	}
	c.buf.Write([]byte{0, 0, 0, 1, b})
}

func (c *copyRows) int2(v int16) {
	c.buf.Write([]byte{0, 0, 0, 2, byte(uint16(v) >> 8), byte(v)})
}

// pgEpoch is where PostgreSQL's timestamps count from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// timestamptz writes t as microseconds since 2000-01-01 UTC.
func (c *copyRows) timestamptz(t time.Time) {
	c.buf.Write([]byte{0, 0, 0, 8})
	c.buf.Write(binary.BigEndian.AppendUint64(c.scratch[:0], uint64(t.Sub(pgEpoch).Microseconds())))
}

func (c *copyRows) int4(v int32) {
	c.buf.Write([]byte{0, 0, 0, 4})
	c.buf.Write(binary.BigEndian.AppendUint32(c.scratch[:0], uint32(v)))
}

// copyTo sends the rows into table's columns and returns how many the server took.
func (c *copyRows) copyTo(ctx context.Context, tx pgx.Tx, table string, columns string) (int64, error) {
	c.buf.Write([]byte{0xff, 0xff}) // the trailer
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, &c.buf, "COPY "+table+" ("+columns+") FROM STDIN (FORMAT binary)")
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() != c.n {
		return 0, fmt.Errorf("copy into %s took %d of %d rows", table, tag.RowsAffected(), c.n)
	}
	return c.n, nil
}
