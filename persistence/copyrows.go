// Copy rows: a batch of rows in PostgreSQL's binary COPY format, written by hand for the
// contact import. pgx's CopyFrom looks up an encoder for every value it is given (by type, by
// reflection): a third of the Go CPU of a million-row import. These rows are a few fixed types.

package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// copyHeader opens a binary COPY stream: the signature, no flags, no header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyRows is a batch of rows being written; reuse it with reset.
type copyRows struct {
	buf     bytes.Buffer
	n       int64
	scratch [4]byte
}

func (c *copyRows) reset() {
	c.buf.Reset()
	c.buf.Write(copyHeader)
	c.n = 0
}

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
