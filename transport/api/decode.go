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

// DecodeJSON reads the request body into v (a pointer to a struct), as ParseJSON does, after
// checking its Content-Type (CheckJSON).
func DecodeJSON(rc *fasthttp.RequestCtx, v any) error {
	if err := CheckJSON(rc); err != nil {
		return err
	}
	return ParseJSON(rc.PostBody(), v)
}

// CheckJSON refuses a body that is not JSON by its Content-Type (415); none is taken as JSON.
func CheckJSON(rc *fasthttp.RequestCtx) error {
	ct := string(rc.Request.Header.ContentType())
	if ct == "" {
		return nil // lenient: many clients omit it for JSON
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return NewProblem("unsupported_media_type", fmt.Sprintf("Content-Type %q is not supported; send application/json", ct))
}

// ParseJSON decodes a JSON body into v (a pointer to a struct). Malformed JSON is 400, and so
// is an object that names a member twice; a well-formed body with a value of the wrong type is
// 422 naming the field, and so is text the store cannot hold (NUL); unknown fields are ignored.
func ParseJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return NewProblem("malformed_json", "the request body is empty; a JSON object is required")
	}
	// Before decoding: a repeated member is refused whatever else is wrong with its values.
	if name, dup := strictjson.DuplicateKey(body); dup {
		return NewProblem("duplicate_json_key", fmt.Sprintf("the member %q appears more than once in one object", name))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return NewProblem("malformed_json", "unexpected data after the JSON object")
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
		return NewProblem("malformed_json", fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return NewProblem("malformed_json", "malformed JSON: the body ends early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return Invalid(FieldError{Field: "body", Message: "must be a JSON object, not " + jsonKind(typ.Value)})
		}
		return Invalid(FieldError{Field: typ.Field, Message: fmt.Sprintf("must be %s, not %s", goTypeName(typ), jsonKind(typ.Value))})
	}
	// Anything else from the decoder (e.g. invalid UTF-16 escapes) is still malformed input.
	return NewProblem("malformed_json", "malformed JSON: "+err.Error())
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
	return Invalid(FieldError{Field: member, Message: "must not contain the NUL character (U+0000)"})
}
