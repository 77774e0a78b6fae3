// Suppression lists as files: a CSV of numbers added in batches, as a company moves its
// opt-out list over from another provider.

package suppressions

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// MaxImportBody bounds an import's whole body: a million numbers with short reasons fit.
const MaxImportBody = 50 << 20

// importBatch is how many numbers one statement adds; reportedErrors how many refused rows
// the answer lists (all are counted).
const (
	importBatch    = 10_000
	reportedErrors = 100
)

// ImportResult is what an import did.
type ImportResult struct {
	Added   int64         `json:"added"`              // numbers put on the list
	Already int64         `json:"already_suppressed"` // on it before, or repeated in the file
	Invalid int           `json:"invalid"`            // rows refused
	Errors  []ImportError `json:"errors"`             // the first 100 refused rows
}

// ImportError is a refused row.
type ImportError struct {
	Line   int    `json:"line"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// importTimeout bounds an import: a million numbers take about half a minute.
const importTimeout = 10 * time.Minute

func (h *Handler) importFile(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := api.Principal(rc).AccountID
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), importTimeout)
	defer cancel()
	var res *ImportResult
	err := api.EachPart(rc, MaxImportBody, func(p api.FormPart) error {
		if p.Name != "file" || res != nil {
			return nil
		}
		var err error
		res, err = h.Import(ctx, acct, p.Body)
		return err
	})
	if err != nil {
		return err
	}
	if res == nil {
		var fe api.FieldErrors
		fe.Add("file", "is required: a CSV of numbers, one a row (phone, then an optional reason)")
		return fe.Err()
	}
	return api.WriteJSON(rc, http.StatusOK, res)
}

// Import adds the numbers of a CSV (phone, then an optional reason; a first row starting
// "phone" is a header) to the account's list (source api), a batch at a time. Refused rows
// are counted and the first hundred listed. The account's tenant is told before the first
// write (its jobs under way look their recipients up from then on, so a page of messages
// loaded while the import runs sees each batch committed) and reloads its list before Import
// returns, also when a batch failed after others were added.
func (h *Handler) Import(ctx context.Context, acct uuid.UUID, file io.Reader) (res *ImportResult, err error) {
	res = &ImportResult{Errors: []ImportError{}}
	told := false
	defer func() {
		if res.Added == 0 {
			return
		}
		if rerr := h.tenants.SuppressionsImported(context.WithoutCancel(ctx), acct); rerr != nil && err == nil {
			err = rerr
		}
	}()
	cr := csv.NewReader(bufio.NewReaderSize(file, 64<<10))
	cr.FieldsPerRecord, cr.ReuseRecord, cr.TrimLeadingSpace = -1, true, true
	nsns, reasons := make([]uint32, 0, importBatch), make([]string, 0, importBatch)
	flush := func() error {
		if !told {
			if err := h.tenants.SuppressionsImported(ctx, acct); err != nil {
				return err
			}
			told = true
		}
		added, err := h.store.SuppressMany(ctx, acct, nsns, reasons, persistence.SuppressedByAPI)
		if err != nil {
			return err
		}
		res.Added += added
		res.Already += int64(len(nsns)) - added
		nsns, reasons = nsns[:0], reasons[:0]
		return nil
	}
	refuse := func(line int, value, reason string) {
		res.Invalid++
		if len(res.Errors) < reportedErrors {
			res.Errors = append(res.Errors, ImportError{Line: line, Value: clip(value, 64), Reason: reason})
		}
	}
	for first := true; ; first = false {
		rec, rerr := cr.Read()
		if errors.Is(rerr, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(rerr, &pe) {
			refuse(pe.StartLine, "", "malformed CSV row: "+pe.Err.Error())
			continue
		}
		if rerr != nil {
			return res, rerr
		}
		line, _ := cr.FieldPos(0)
		phone := strings.TrimSpace(strings.TrimPrefix(rec[0], "\uFEFF"))
		if first && strings.EqualFold(phone, "phone") || len(rec) == 1 && phone == "" {
			continue
		}
		nsn, ok := h.parsePhone(phone)
		if !ok {
			refuse(line, phone, phoneMessage)
			continue
		}
		reason := ""
		if len(rec) > 1 {
			reason = strings.TrimSpace(rec[1])
		}
		// A NUL, like bytes that are not UTF-8, cannot be stored: the row's error, not the
		// whole batch's (a 500 after earlier batches were stored).
		if !utf8.ValidString(reason) || strings.ContainsRune(reason, 0) || utf8.RuneCountInString(reason) > maxReasonLen {
			refuse(line, phone, "the reason must be UTF-8 text without NUL characters, of at most 200 characters")
			continue
		}
		nsns, reasons = append(nsns, nsn), append(reasons, reason)
		if len(nsns) == importBatch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
