// Contacts: an account's address book and its groups, with CSV import and export.

package api

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/contactcsv"
)

// Contacts is what the contact endpoints need from the store.
type Contacts interface {
	ListContacts(ctx context.Context, accountID uuid.UUID, f persistence.ContactFilter, p persistence.Page) ([]persistence.Contact, int64, error)
	CreateContact(ctx context.Context, n persistence.NewContact) (persistence.Contact, error)
	OptOutContact(ctx context.Context, accountID, id uuid.UUID) error
	Groups(ctx context.Context, accountID uuid.UUID) ([]persistence.Group, error)
	CreateGroup(ctx context.Context, accountID uuid.UUID, name, description string) (persistence.Group, error)
	DeleteGroup(ctx context.Context, accountID, id uuid.UUID) error
	GroupOf(ctx context.Context, accountID, id uuid.UUID) error
	ExportContacts(ctx context.Context, accountID uuid.UUID, groupID *uuid.UUID, each func(persistence.Contact) error) error
	BeginImport(ctx context.Context, accountID uuid.UUID, opts persistence.ImportOptions) (*persistence.ContactImport, error)
}

// maxImportBody bounds a CSV import's whole body.
const maxImportBody = 50 << 20

type contactJSON struct {
	ID         uuid.UUID  `json:"id"`
	Phone      string     `json:"phone"`
	FirstName  string     `json:"first_name"`
	LastName   string     `json:"last_name"`
	GroupID    *uuid.UUID `json:"group_id"`
	IsOptedOut bool       `json:"is_opted_out"`
	CreatedAt  timestamp  `json:"created_at"`
}

func newContactJSON(c persistence.Contact) contactJSON {
	return contactJSON{ID: c.ID, Phone: c.Phone, FirstName: c.FirstName, LastName: c.LastName, GroupID: c.GroupID,
		IsOptedOut: c.OptedOut, CreatedAt: timestamp(c.CreatedAt)}
}

type groupJSON struct {
	ID           uuid.UUID `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	ContactCount int64     `json:"contact_count"`
	CreatedAt    timestamp `json:"created_at"`
}

func (s *Server) listContacts(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	acct := principal(rc).AccountID
	f := persistence.ContactFilter{GroupID: q.UUID("group_id"), Search: persistence.SearchTerm(q.raw("search"))}
	if n := utf8.RuneCountInString(f.Search); n > 100 {
		q.wrong.add("search", "must be at most 100 characters")
	}
	l := s.list(listContacts, acct, "group_id="+optID(f.GroupID), "search="+f.Search)
	page := q.Page(l)
	if err := q.err(); err != nil {
		return err
	}
	list, total, err := s.Contacts.ListContacts(ctx, acct, f, page)
	if err != nil {
		return err
	}
	out := make([]contactJSON, len(list))
	for i, c := range list {
		out[i] = newContactJSON(c)
	}
	return writeJSON(rc, http.StatusOK, newEnvelope(out, total, page, l, func(c contactJSON) uuid.UUID { return c.ID }))
}

func (s *Server) createContact(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in struct {
		Phone     *string `json:"phone"`
		FirstName *string `json:"first_name"`
		LastName  *string `json:"last_name"`
		GroupID   *string `json:"group_id"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return err
	}
	n := persistence.NewContact{AccountID: principal(rc).AccountID}
	var fe fieldErrors
	if in.Phone == nil || strings.TrimSpace(*in.Phone) == "" {
		fe.add("phone", "is required")
	} else if num, err := s.Plan.Normalize(*in.Phone); err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
		fe.add("phone", "must be a Kenyan mobile number (07…, 01…, 254… or +254…)")
	} else {
		n.Phone = num.E164
	}
	for _, f := range []struct {
		name string
		v    *string
		dst  *string
	}{{"first_name", in.FirstName, &n.FirstName}, {"last_name", in.LastName, &n.LastName}} {
		if f.v == nil {
			continue
		}
		if *f.dst = strings.TrimSpace(*f.v); utf8.RuneCountInString(*f.dst) > contactcsv.MaxNameLen {
			fe.add(f.name, fmt.Sprintf("must be at most %d characters", contactcsv.MaxNameLen))
		}
	}
	if in.GroupID != nil {
		if id, err := uuid.Parse(*in.GroupID); err != nil {
			fe.add("group_id", "must be the id of one of your groups")
		} else {
			n.GroupID = &id
		}
	}
	if err := fe.err(); err != nil {
		return err
	}
	c, err := s.Contacts.CreateContact(ctx, n)
	if errors.Is(err, persistence.ErrUnknownGroup) {
		return invalid(FieldError{Field: "group_id", Message: "must be the id of one of your groups"})
	}
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusCreated, newContactJSON(c))
}

func (s *Server) deleteContact(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	if err := s.Contacts.OptOutContact(ctx, principal(rc).AccountID, id); err != nil {
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

func (s *Server) contactsTemplate(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("text/csv; charset=utf-8")
	rc.Response.Header.Set("Content-Disposition", `attachment; filename="contacts-template.csv"`)
	rc.SetStatusCode(http.StatusOK)
	rc.SetBodyString("phone,first_name,last_name\r\n0712345678,Jane,Wanjiru\r\n")
	return nil
}

func (s *Server) listGroups(ctx context.Context, rc *fasthttp.RequestCtx) error {
	gs, err := s.Contacts.Groups(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]groupJSON, len(gs))
	for i, g := range gs {
		out[i] = groupJSON{ID: g.ID, Name: g.Name, Description: g.Description, ContactCount: g.ContactCount, CreatedAt: timestamp(g.CreatedAt)}
	}
	return writeJSON(rc, http.StatusOK, out)
}

func (s *Server) createGroup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	if err := decodeJSON(rc, &in); err != nil {
		return err
	}
	var fe fieldErrors
	name, desc := "", ""
	if in.Name != nil {
		name = strings.TrimSpace(*in.Name)
	}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		fe.add("name", "is required")
	case n > 100:
		fe.add("name", "must be at most 100 characters")
	}
	if in.Description != nil {
		if desc = strings.TrimSpace(*in.Description); utf8.RuneCountInString(desc) > 500 {
			fe.add("description", "must be at most 500 characters")
		}
	}
	if err := fe.err(); err != nil {
		return err
	}
	g, err := s.Contacts.CreateGroup(ctx, principal(rc).AccountID, name, desc)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusCreated, groupJSON{ID: g.ID, Name: g.Name, Description: g.Description, CreatedAt: timestamp(g.CreatedAt)})
}

func (s *Server) deleteGroup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	if err := s.Contacts.DeleteGroup(ctx, principal(rc).AccountID, id); err != nil {
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

// exportContacts streams the account's active contacts as CSV, as they are read.
func (s *Server) exportContacts(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	group := q.UUID("group_id")
	if err := q.err(); err != nil {
		return err
	}
	acct := principal(rc).AccountID
	if group != nil {
		if err := s.Contacts.GroupOf(ctx, acct, *group); err != nil {
			return err
		}
	}
	rc.Response.Header.SetContentType("text/csv; charset=utf-8")
	rc.Response.Header.Set("Content-Disposition", `attachment; filename="contacts.csv"`)
	rc.SetStatusCode(http.StatusOK)
	// The body is written after the handler returns: it gets its own deadline and never
	// touches rc.
	timeout := s.streamTimeout()
	rc.SetBodyStreamWriter(func(bw *bufio.Writer) {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		w := csv.NewWriter(bw)
		w.UseCRLF = true
		_ = w.Write(contactcsv.ExportHeader())
		err := s.Contacts.ExportContacts(sctx, acct, group, func(c persistence.Contact) error {
			if err := contactcsv.WriteContact(w, c); err != nil {
				return err
			}
			if w.Flush(); w.Error() != nil {
				return w.Error() // the client went away
			}
			return nil
		})
		w.Flush()
		if err != nil {
			s.Log.Warn("contact export ended early", slog.String("account_id", acct.String()), slog.Any("error", err))
		}
	})
	return nil
}

// streamTimeout bounds a streamed body (an export) or an upload: long enough for a large file.
func (s *Server) streamTimeout() time.Duration { return max(s.opts.RequestTimeout, 10*time.Minute) }

// importContacts merges a CSV upload into the account's contacts as it is read. A file that
// comes after its group_id is merged as it arrives; one that comes first is spooled to a
// temporary file until the form ends, as no row can be written before it is known whether a
// group follows. With ?report=csv the answer is the rows not imported, with why, as CSV
// (counts in headers).
func (s *Server) importContacts(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := newQuery(rc)
	report := q.Enum("report", "csv") == "csv"
	if err := q.err(); err != nil {
		return err
	}
	acct := principal(rc).AccountID
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.streamTimeout())
	defer cancel()
	imp, err := s.Contacts.BeginImport(ctx, acct, persistence.ImportOptions{Workers: s.opts.ImportWorkers, Report: report})
	if err != nil {
		return err
	}
	defer imp.Close(ctx)
	var spool *os.File
	defer func() {
		if spool != nil {
			spool.Close()
		}
	}()
	badGroup := invalid(FieldError{Field: "group_id", Message: "must be the id of one of your groups"})
	files, groups := 0, 0
	err = eachPart(rc, maxImportBody, func(p formPart) error {
		switch p.Name {
		case "group_id":
			if groups++; groups > 1 {
				return invalid(FieldError{Field: "group_id", Message: "is given more than once"})
			}
			raw, _ := io.ReadAll(io.LimitReader(p.Body, 100))
			id, err := uuid.Parse(strings.TrimSpace(string(raw)))
			if err != nil {
				return badGroup
			}
			if err := imp.SetGroup(ctx, id); errors.Is(err, persistence.ErrUnknownGroup) {
				return badGroup
			} else if err != nil {
				return err
			}
		case "file":
			if files++; files > 1 {
				return invalid(FieldError{Field: "file", Message: "is given more than once"})
			}
			if groups > 0 {
				return s.runImport(ctx, imp, p.Body)
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
	if err == nil && spool != nil {
		if _, err = spool.Seek(0, io.SeekStart); err == nil {
			err = s.runImport(ctx, imp, spool)
		}
	}
	switch {
	case errors.Is(err, contactcsv.ErrNotCSV):
		return invalid(FieldError{Field: "file", Message: "is not a CSV file (a text file of phone,first_name,last_name rows)"})
	case err != nil:
		return err
	case files == 0:
		return invalid(FieldError{Field: "file", Message: "is required (a CSV file)"})
	}
	res := imp.Result()
	if report {
		return s.importReport(ctx, rc, imp, res)
	}
	if err := imp.Commit(ctx); err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, importJSON{Imported: res.Imported, Skipped: res.Skipped, Errors: res.Errors, Message: importMessage(res)})
}

// runImport merges a CSV file's rows.
func (s *Server) runImport(ctx context.Context, imp *persistence.ContactImport, file io.Reader) error {
	rows, err := contactcsv.NewReader(file, s.Plan)
	if err != nil {
		return err
	}
	return imp.Run(ctx, rows.Next)
}

// importReport answers an import with the rows not imported, as CSV, then commits. The rows
// are read before the commit (the transactions keep them), into a temporary file: a report of
// a million repeats is 80 MB, which is no memory's business.
func (s *Server) importReport(ctx context.Context, rc *fasthttp.RequestCtx, imp *persistence.ContactImport, res persistence.ImportResult) error {
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
	h := &rc.Response.Header
	h.SetContentType("text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="contacts-import-report.csv"`)
	h.Set("X-Imported", strconv.FormatInt(res.Imported, 10))
	h.Set("X-Skipped", strconv.FormatInt(res.Skipped, 10))
	h.Set("X-Errors", strconv.FormatInt(res.Errors, 10))
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
