package main

import (
	"bytes"
	"context"
	"os/exec"
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
	for _, lab := range []string{"bench", "drill"} {
		if err := run(context.Background(), []string{lab}, &out, &out, none); err == nil || !strings.Contains(err.Error(), "tuma-lab "+lab) {
			t.Errorf("%s error = %v; want it to point at tuma-lab", lab, err)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"help"}, &out, &out, none); err != nil ||
		strings.Contains(out.String(), "\n  bench ") || strings.Contains(out.String(), "\n  drill ") || !strings.Contains(out.String(), "tuma-lab") {
		t.Errorf("help = %q, %v; want the lab's commands only pointed at (tuma-lab)", out.String(), err)
	}
}

// The server binary links no package of the lab (bench, bench/drill, …): cmd/tuma-lab does.
func TestServerLinksNoLab(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), module+"cmd/tuma/app") {
		t.Fatalf("go list -deps lists %d packages, not cmd/tuma/app: the listing is wrong", len(deps))
	}
	for _, d := range deps {
		if within(strings.TrimPrefix(d, module), "bench") {
			t.Errorf("cmd/tuma links %s", d)
		}
	}
}
