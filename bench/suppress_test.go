package bench

import (
	"bytes"
	"testing"
)

// The suppressed numbers are distinct, valid-looking and never among those a load sends to.
func TestSuppressedNumbersAreNeverSentTo(t *testing.T) {
	rows := bytes.Split(bytes.TrimSuffix(suppressedCSV(100_000), []byte("\r\n")), []byte("\r\n"))
	if len(rows) != 100_000 {
		t.Fatalf("%d rows; want 100,000", len(rows))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if len(r) != 10 || r[0] != '0' || seen[string(r)] {
			t.Fatalf("row %q: not a distinct 10-digit number", r)
		}
		seen[string(r)] = true
	}
	pool := newNumbers(mixPrefixes(), poolSize(maxRecipients))
	for i := 0; i < pool.count; i++ {
		n := string(pool.joined[i*numberWidth+1 : i*numberWidth+11])
		if seen[n] {
			t.Fatalf("%s is both suppressed and in the send pool", n)
		}
	}
}
