// Contacts as files: the CSV export, and the import with its report.

package contacts

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/contactcsv"
)

// MaxImportBody bounds a CSV import's whole body.
const MaxImportBody = 50 << 20

func (h *Handler) exportContacts(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	group := q.UUID("group_id")
	if err := q.Err(); err != nil {
		return err
	}
	return h.Export(ctx, rc, api.Principal(rc).AccountID, group)
}

// Export answers with the account's active contacts (of one group, when given) as a CSV
// file. Another account's group is persistence.ErrNotFound. The rows are written to a
// temporary file first (never held in memory), then sent from it with their length: the
// database is held for as long as it takes to read them, not for as long as a slow client
// takes to download (seventeen slow downloads held every connection of the node), and an
// export that fails is an error, not a 200 whose file ends early and looks complete.
func (h *Handler) Export(ctx context.Context, rc *fasthttp.RequestCtx, acct uuid.UUID, group *uuid.UUID) error {
	if group != nil {
		if err := h.store.GroupOf(ctx, acct, *group); err != nil {
			return err
		}
	}
	f, err := os.CreateTemp("", "tuma-export-*.csv")
	if err != nil {
		return fmt.Errorf("spool export: %w", err)
	}
	os.Remove(f.Name()) // gone once closed
	sent := false
	defer func() {
		if !sent {
			f.Close()
		}
	}()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.streamTimeout())
	defer cancel()
	bw := bufio.NewWriterSize(f, 64<<10)
	w := csv.NewWriter(bw)
	w.UseCRLF = true
	_ = w.Write(contactcsv.ExportHeader())
	if err := h.store.ExportContacts(sctx, acct, group, func(c persistence.Contact) error {
		return contactcsv.WriteContact(w, c)
	}); err != nil {
		return err
	}
	if w.Flush(); w.Error() != nil {
		return fmt.Errorf("spool export: %w", w.Error())
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("spool export: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fmt.Errorf("spool export: %w", err)
	}
	rc.Response.Header.SetContentType("text/csv; charset=utf-8")
	rc.Response.Header.Set("Content-Disposition", `attachment; filename="contacts.csv"`)
	rc.SetStatusCode(http.StatusOK)
	rc.SetBodyStream(f, int(size)) // fasthttp closes it once sent
	sent = true
	return nil
}

// streamTimeout bounds a streamed body (an export) or an upload: long enough for a large file.
func (h *Handler) streamTimeout() time.Duration { return max(h.opts.RequestTimeout, 10*time.Minute) }

// importContacts merges a CSV upload into the account's contacts as it is read. With
// ?report=csv the answer is the rows not imported, with why, as CSV (counts in headers).
func (h *Handler) importContacts(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	report := api.Enum(q, "report", "csv") == "csv"
	if err := q.Err(); err != nil {
		return err
	}
	parts := func(each func(api.FormPart) error) error { return api.EachPart(rc, MaxImportBody, each) }
	return h.Import(ctx, api.Principal(rc).AccountID, parts, report, func(ctx context.Context, imp *persistence.ContactImport) error {
		if report {
			return h.WriteReport(ctx, rc, imp)
		}
		if err := imp.Commit(ctx); err != nil {
			return err
		}
		res := imp.Result()
		return api.WriteJSON(rc, http.StatusOK, importJSON{Imported: res.Imported, Skipped: res.Skipped, Errors: res.Errors, Message: importMessage(res)})
	})
}

// Parts reads a multipart form's parts in order, calling each for every one (api.EachPart
// over a request's body).
type Parts func(each func(api.FormPart) error) error

// Import merges the CSV of an upload's "file" part into the account's contacts, into the
// group of its "group_id" part when there is one; other parts are passed over. The file is
// spooled to a temporary file (never held in memory) until the form ends, and only then is
// the import begun: its connections and the account's lock are held while rows are merged,
// never while a client is still sending (a stalled upload held both, and a few took every
// connection of the node). With report the import keeps the rows not imported, with why.
//
// Once the file is in, finish gets the import, merged but not committed (Result says what it
// did; with report, Rejected lists the rows): finish commits it, and writes the answer. The
// import has its own deadline, long enough for a large file; ctx is the one finish gets.
func (h *Handler) Import(ctx context.Context, acct uuid.UUID, parts Parts, report bool, finish func(ctx context.Context, imp *persistence.ContactImport) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.streamTimeout())
	defer cancel()
	var spool *os.File
	defer func() {
		if spool != nil {
			spool.Close()
		}
	}()
	badGroup := api.Invalid(api.FieldError{Field: "group_id", Message: "must be the id of one of your groups"})
	var group *uuid.UUID
	files, groups := 0, 0
	err := parts(func(p api.FormPart) error {
		switch p.Name {
		case "group_id":
			if groups++; groups > 1 {
				return api.Invalid(api.FieldError{Field: "group_id", Message: "is given more than once"})
			}
			raw, _ := io.ReadAll(io.LimitReader(p.Body, 100))
			if strings.TrimSpace(string(raw)) == "" {
				return nil // a field left blank, as forms send one: no group
			}
			id, err := uuid.Parse(strings.TrimSpace(string(raw)))
			if err != nil {
				return badGroup
			}
			group = &id
		case "file":
			if files++; files > 1 {
				return api.Invalid(api.FieldError{Field: "file", Message: "is given more than once"})
			}
			var err error
			if spool, err = os.CreateTemp("", "tuma-import-*.csv"); err != nil {
				return fmt.Errorf("spool import: %w", err)
			}
			os.Remove(spool.Name()) // gone once closed
			if _, err := io.Copy(spool, p.Body); err != nil {
				return fmt.Errorf("spool import: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if files == 0 {
		return api.Invalid(api.FieldError{Field: "file", Message: "is required (a CSV file)"})
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool import: %w", err)
	}
	imp, err := h.store.BeginImport(ctx, acct, persistence.ImportOptions{Workers: h.opts.ImportWorkers, Report: report})
	if err != nil {
		return err
	}
	defer imp.Close(ctx)
	if group != nil {
		if err := imp.SetGroup(ctx, *group); errors.Is(err, persistence.ErrUnknownGroup) {
			return badGroup
		} else if err != nil {
			return err
		}
	}
	if err := h.runImport(ctx, imp, spool); errors.Is(err, contactcsv.ErrNotCSV) {
		return api.Invalid(api.FieldError{Field: "file", Message: "is not a CSV file (a text file of phone,first_name,last_name rows)"})
	} else if err != nil {
		return err
	}
	return finish(ctx, imp)
}

// runImport merges a CSV file's rows.
func (h *Handler) runImport(ctx context.Context, imp *persistence.ContactImport, file io.Reader) error {
	rows, err := contactcsv.NewReader(file, h.plan)
	if err != nil {
		return err
	}
	return imp.Run(ctx, rows.Next)
}

// WriteReport commits an import begun with its report and answers with the rows not
// imported, as CSV, with the counts in headers. The rows are read before the commit (the
// transactions keep them), into a temporary file: a report of a million repeats is 80 MB,
// which is no memory's business.
func (h *Handler) WriteReport(ctx context.Context, rc *fasthttp.RequestCtx, imp *persistence.ContactImport) error {
	res := imp.Result()
	f, err := os.CreateTemp("", "tuma-import-report-*.csv")
	if err != nil {
		return fmt.Errorf("import report: %w", err)
	}
	os.Remove(f.Name()) // gone when closed: after the body is sent, or on any failure below
	sent := false
	defer func() {
		if !sent {
			f.Close()
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	w := csv.NewWriter(bw)
	w.UseCRLF = true
	_ = w.Write(contactcsv.ReportHeader())
	if err := imp.Rejected(ctx, func(r persistence.ImportRow) error { return contactcsv.WriteRejected(w, r) }); err != nil {
		return err
	}
	w.Flush()
	if err := errors.Join(w.Error(), bw.Flush()); err != nil {
		return fmt.Errorf("import report: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fmt.Errorf("import report: %w", err)
	}
	if err := imp.Commit(ctx); err != nil {
		return err
	}
	hdr := &rc.Response.Header
	hdr.SetContentType("text/csv; charset=utf-8")
	hdr.Set("Content-Disposition", `attachment; filename="contacts-import-report.csv"`)
	hdr.Set("X-Imported", strconv.FormatInt(res.Imported, 10))
	hdr.Set("X-Skipped", strconv.FormatInt(res.Skipped, 10))
	hdr.Set("X-Errors", strconv.FormatInt(res.Errors, 10))
	rc.SetStatusCode(http.StatusOK)
	rc.SetBodyStream(f, int(size)) // fasthttp closes the file once it is sent
	sent = true
	return nil
}

type importJSON struct {
	Imported int64  `json:"imported"`
	Skipped  int64  `json:"skipped"`
	Errors   int64  `json:"errors"`
	Message  string `json:"message"`
}

func importMessage(r persistence.ImportResult) string {
	plural := func(n int64, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	return fmt.Sprintf("Imported %s; skipped %s (already in your contacts, or repeated in the file); %s refused (invalid phone numbers or malformed rows; ?report=csv lists them).",
		plural(r.Imported, "contact", "contacts"), plural(r.Skipped, "row", "rows"), plural(r.Errors, "row", "rows"))
}
