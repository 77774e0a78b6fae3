package persistence

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// The uuid[] written whole is byte for byte what pgx's own array codec writes, and reads back.
func TestUUIDArrayEncoding(t *testing.T) {
	fast := pgtype.NewMap()
	registerUUID(fast)
	plain := pgtype.NewMap() // pgx's codecs only
	for _, ids := range [][]uuid.UUID{nil, {}, {NewID()}, {NewID(), uuid.Nil, NewID()}} {
		got, err := fast.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%v encodes as %x; pgx writes %x", ids, got, want)
		}
		var back []uuid.UUID
		if err := fast.Scan(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, got, &back); err != nil {
			t.Fatal(err)
		}
		if len(back) != len(ids) || (back == nil) != (ids == nil) {
			t.Fatalf("%v read back as %v", ids, back)
		}
		for i := range ids {
			if back[i] != ids[i] {
				t.Errorf("%v read back as %v", ids, back)
			}
		}
	}
}
