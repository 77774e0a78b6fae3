package persistence

import (
	"bytes"
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
