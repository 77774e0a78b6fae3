package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// contract is /openapi.json as a validator, loaded once for every test of the package.
var contract = sync.OnceValues(func() (validator.Validator, error) {
	spec, err := os.ReadFile("../../../transport/api/openapi.json")
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi.json: %v", errs)
	}
	return v, nil
})

// checkContract fails the test when a response the node gave is not what /openapi.json says
// the operation answers: its status, headers and body.
func (n *node) checkContract(req *http.Request, resp *http.Response, body []byte) {
	n.t.Helper()
	v, err := contract()
	if err != nil {
		n.t.Fatalf("load the contract: %v", err)
	}
	r := *resp
	r.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := v.ValidateHttpResponse(req, &r); !ok {
		var msgs []string
		for _, e := range errs {
			if e.ValidationType == "path" && (resp.StatusCode == 404 || resp.StatusCode == 405) {
				continue // a probe of a path or method the API does not have, refused as it should be
			}
			msgs = append(msgs, e.Message+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+se.Reason+" at "+se.FieldPath)
			}
		}
		if len(msgs) == 0 {
			return
		}
		n.t.Errorf("%s %s answered %d, which /openapi.json does not describe:\n%s\nbody: %.300s",
			req.Method, req.URL.Path, resp.StatusCode, strings.Join(msgs, "\n"), body)
	}
}
