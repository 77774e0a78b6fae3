package web

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	brrr "github.com/molecule-man/go-brrr"
)

// Every size round-trips, including bodies larger than the biggest window a small body gets.
func TestBrotliRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 1023, 1025, 70_000, 3 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = "abcdefgh <td>"[rng.IntN(13)]
		}
		for _, q := range []int{pageBrotli, assetBrotli} {
			out, err := brotli(body, q)
			if err != nil {
				t.Fatalf("%d bytes at %d: %v", n, q, err)
			}
			back, err := io.ReadAll(brrr.NewReader(bytes.NewReader(out)))
			if err != nil || !bytes.Equal(back, body) {
				t.Fatalf("%d bytes at %d: round trip gave %d bytes, %v", n, q, len(back), err)
			}
		}
	}
}
