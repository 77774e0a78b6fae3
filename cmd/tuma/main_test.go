package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunCommands(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, &out, none); err != nil || !strings.HasPrefix(out.String(), "tuma ") {
		t.Errorf("version = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"config"}, &out, &out, none); err != nil || !strings.Contains(out.String(), "TUMA_HTTP_ADDR") {
		t.Errorf("config = %q, %v", out.String(), err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, &out, &out, none); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("unknown command error = %v", err)
	}
	bad := func(k string) (string, bool) { return "nope", k == "TUMA_HTTP_ADDR" }
	if err := run(context.Background(), []string{"serve"}, &out, &out, bad); err == nil || !strings.Contains(err.Error(), "TUMA_HTTP_ADDR") {
		t.Errorf("serve with bad config error = %v; want it to name TUMA_HTTP_ADDR", err)
	}
}
