package contacts

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// rowsShown bounds the rows not imported that the result lists; the CSV report has them all.
const rowsShown = 100

// importData is what the import page shows: the form, and the result of an import.
type importData struct {
	Pick   []choice // the groups to import into
	Result *importResult
}

// importResult is what an import did.
type importResult struct {
	persistence.ImportResult
	GroupID string
	Group   *persistence.Group      // nil: none, or deleted since
	Rows    []persistence.ImportRow // the first rows not imported, in file order
	More    int64                   // rows not imported beyond those
	Refused int64                   // rows not imported: skipped and refused
}

// importForm shows the upload form.
func (p *Pages) importForm(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderImport(ctx, rc, http.StatusOK, web.NewForm(), nil)
}

func (p *Pages) renderImport(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form, res *importResult) error {
	gs, err := p.Store.GroupNames(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	d := importData{Pick: groupChoices(gs, "No group", f.Get("group_id")), Result: res}
	if res != nil && res.GroupID != "" {
		res.Group = findGroup(gs, res.GroupID)
	}
	return p.Views.Render(ctx, rc, status, "import", &web.Page{Title: "Import contacts", Nav: listPath, Data: d, Form: f})
}

// errEnough stops reading the rows not imported once the page has what it shows.
var errEnough = errors.New("enough rows")

// afterUpload bounds each read an upload makes besides the import: the request's own deadline
// may have passed while a large file came in.
const afterUpload = 10 * time.Second

// upload imports a CSV with POST /contacts/import's operation, streamed as it arrives. The
// answer is a page with the counts and the first rows not imported with why; with
// ?report=csv, as the API's, the rows not imported as a CSV file to download.
func (p *Pages) upload(ctx context.Context, rc *fasthttp.RequestCtx, parts web.Parts) error {
	q := api.NewQuery(rc)
	report := api.Enum(q, "report", "csv") == "csv"
	if err := q.Err(); err != nil {
		return err
	}
	acct := web.AccountID(rc)
	detached := context.WithoutCancel(ctx)
	var (
		group string
		res   importResult
	)
	err := p.Ops.Import(ctx, acct, p.ownParts(detached, acct, parts, &group), true, func(ctx context.Context, imp *persistence.ContactImport) error {
		if report {
			return p.Ops.WriteReport(ctx, rc, imp)
		}
		res.ImportResult = imp.Result()
		res.Refused = res.Skipped + res.Errors
		err := imp.Rejected(ctx, func(r persistence.ImportRow) error {
			if len(res.Rows) == rowsShown {
				return errEnough
			}
			res.Rows = append(res.Rows, r)
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return err
		}
		res.More = res.Refused - int64(len(res.Rows))
		return imp.Commit(ctx)
	})
	if report && err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(detached, afterUpload)
	defer cancel()
	f := web.NewForm()
	if err != nil {
		status, err := shown(f, err)
		if err != nil {
			return err
		}
		f.Set("group_id", group)
		return p.renderImport(ctx, rc, status, f, nil)
	}
	res.GroupID = group
	return p.renderImport(ctx, rc, http.StatusOK, f, &res)
}

// ownParts passes an upload's parts on to the import, noting its group: an empty group_id
// (no group) is left out, and one that is not the account's group (a forged form) is a 404
// page before any row is merged.
func (p *Pages) ownParts(ctx context.Context, acct uuid.UUID, parts web.Parts, group *string) func(func(api.FormPart) error) error {
	return func(each func(api.FormPart) error) error {
		return parts(func(part api.FormPart) error {
			if part.Name != "group_id" {
				return each(part)
			}
			raw, err := io.ReadAll(io.LimitReader(part.Body, 100))
			if err != nil {
				return err
			}
			id := strings.TrimSpace(string(raw))
			if id == "" {
				return nil
			}
			cctx, cancel := context.WithTimeout(ctx, afterUpload)
			defer cancel()
			if err := p.ownGroup(cctx, acct, id); err != nil {
				return err
			}
			*group = id
			part.Body = bufio.NewReader(strings.NewReader(id))
			return each(part)
		})
	}
}
