package bench

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"strconv"
)

// maxSuppressed is the most numbers --suppressed puts on a list: 4,000,000 rows of 12 bytes
// fit the import's 50 MB.
const maxSuppressed = 4_000_000

// suppressedSuffix is where suppressed numbers start after their 3-digit prefix: past every
// number a send pool holds (suffixes below 10,000,000 ÷ 2), so none of them is ever sent to and
// each lookup is a miss in a list spread over the same prefixes as the traffic.
const suppressedSuffix = 5_000_000

// suppress puts cfg.Suppressed numbers on each account's suppression list with one CSV
// import per account.
func suppress(ctx context.Context, a *api, cfg Config, tenants []*tenant) error {
	if cfg.Suppressed == 0 {
		return nil
	}
	csv := suppressedCSV(cfg.Suppressed)
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", "suppressed.csv")
	if err != nil {
		return err
	}
	if _, err := part.Write(csv); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	for _, t := range tenants {
		c := a.do(ctx, "POST", "/suppressions/import", body.Bytes(), "X-API-Key", t.key, "Content-Type", w.FormDataContentType())
		if err := c.expect(200); err != nil {
			return fmt.Errorf("import %d suppressions: %w", cfg.Suppressed, err)
		}
	}
	return nil
}

// suppressedCSV is n distinct numbers, one a row, spread over the traffic's prefixes.
func suppressedCSV(n int) []byte {
	pre := mixPrefixes()
	b := make([]byte, 0, n*12)
	for i := range n {
		b = append(b, pre[i%len(pre)]...)
		b = strconv.AppendInt(b, int64(suppressedSuffix+i/len(pre)), 10)
		b = append(b, '\r', '\n')
	}
	return b
}
