package persistence

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A created_at range becomes an id range: ids minted in a millisecond sort between that
// millisecond's floor and the next one's.
func TestIDFloorBoundsIDsMintedThen(t *testing.T) {
	for range 1000 {
		before := time.Now()
		id := NewID()
		after := time.Now()
		if lo := idFloor(before.Add(-time.Millisecond)); bytes.Compare(lo[:], id[:]) > 0 {
			t.Fatalf("floor %s of %s sorts after %s, minted then", lo, before, id)
		}
		if hi := idFloor(after.Add(2 * time.Millisecond)); bytes.Compare(hi[:], id[:]) <= 0 {
			t.Fatalf("floor %s of %s sorts before %s, minted earlier", hi, after, id)
		}
	}
	f := idFloor(time.UnixMilli(0x0123456789ab))
	if want := uuid.MustParse("01234567-89ab-7000-8000-000000000000"); f != want {
		t.Fatalf("idFloor = %s, want %s", f, want)
	}
	if f.Version() != 7 {
		t.Fatalf("version %d", f.Version())
	}
}

// An event's public id is evt_ and its sequence number in 16 hex digits, as fmt spells it.
func FuzzEventID(f *testing.F) {
	for _, seq := range []int64{0, 1, 0xabc << 16, 1<<62 + 7, 1<<63 - 1} {
		f.Add(seq)
	}
	f.Fuzz(func(t *testing.T, seq int64) {
		if seq < 0 { // sequence numbers are positive
			seq = -(seq + 1)
		}
		want := fmt.Sprintf("evt_%016x", seq)
		if got := EventID(seq); got != want {
			t.Fatalf("EventID(%d) = %s; want %s", seq, got, want)
		}
		if got := string(AppendEventID([]byte("x"), seq)); got != "x"+want {
			t.Fatalf("AppendEventID(x, %d) = %s; want x%s", seq, got, want)
		}
	})
}
