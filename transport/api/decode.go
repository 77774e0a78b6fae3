package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/strictjson"
)

// decodeJSON reads the request body into v (a pointer to a struct).
//
// Malformed JSON is 400, and so is an object that names a member twice; a well-formed body with a value of the wrong type is 422 naming the
// field; unknown fields are ignored; a body that is not JSON by its Content-Type is 415.
func decodeJSON(rc *fasthttp.RequestCtx, v any) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	return decodeJSONBytes(rc.PostBody(), v)
}

func checkJSONContentType(rc *fasthttp.RequestCtx) error {
	ct := string(rc.Request.Header.ContentType())
	if ct == "" {
		return nil // lenient: many clients omit it for JSON
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return problem("unsupported_media_type", fmt.Sprintf("Content-Type %q is not supported; send application/json", ct))
}

func decodeJSONBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return problem("malformed_json", "the request body is empty; a JSON object is required")
	}
	// Before decoding: a repeated member is refused whatever else is wrong with its values.
	if name, dup := strictjson.DuplicateKey(body); dup {
		return problem("duplicate_json_key", fmt.Sprintf("the member %q appears more than once in one object", name))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem("malformed_json", "unexpected data after the JSON object")
	}
	if name, nul := strictjson.NulMember(body); nul { // the store could not hold it
		return nulProblem(name)
	}
	return nil
}

func jsonProblem(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return problem("malformed_json", fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem("malformed_json", "malformed JSON: the body ends early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return invalid(FieldError{Field: "body", Message: "must be a JSON object, not " + jsonKind(typ.Value)})
		}
		return invalid(FieldError{Field: typ.Field, Message: fmt.Sprintf("must be %s, not %s", goTypeName(typ), jsonKind(typ.Value))})
	}
	// Anything else from the decoder (e.g. invalid UTF-16 escapes) is still malformed input.
	return problem("malformed_json", "malformed JSON: "+err.Error())
}

func jsonKind(v string) string {
	switch v {
	case "":
		return "this value"
	case "number", "string", "bool", "array", "object", "null":
		return "a JSON " + v
	}
	return v
}

func goTypeName(e *json.UnmarshalTypeError) string {
	if e.Type == nil {
		return "another type"
	}
	switch e.Type.Kind().String() {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "another type"
}

// nulProblem is the 422 of a body with NUL in a member.
func nulProblem(member string) *Problem {
	return invalid(FieldError{Field: member, Message: "must not contain the NUL character (U+0000)"})
}

// admitted reports whether a route counts against the admission bound: probes, metrics and
// the API reference are answered whatever the load, so operators can see a node that is
// shedding.
func admitted(route string) bool {
	switch route {
	case "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs":
		return false
	}
	return !strings.HasPrefix(route, "/docs/") && !strings.HasPrefix(route, "/debug/pprof/")
}
