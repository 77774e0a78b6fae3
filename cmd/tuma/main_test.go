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

// serve --banner says where the node is reached: TUMA_PUBLIC_URL when set, else where it
// listens, with the documents, metrics and health checks (make run prints it).
func TestBanner(t *testing.T) {
	for _, c := range []struct {
		name, public, listen, internal string
		want, wantNot                  []string
	}{
		{"listen address", "", "127.0.0.1:9999", "",
			[]string{"Dashboard http://127.0.0.1:9999/app/\n", "API       http://127.0.0.1:9999\n", "http://127.0.0.1:9999/docs", "http://127.0.0.1:9999/openapi.json",
				"Metrics   http://127.0.0.1:9999/metrics", "http://127.0.0.1:9999/healthz", "http://127.0.0.1:9999/readyz"},
			[]string{"8080"}},
		{"every interface", "", "[::]:8081", "0.0.0.0:9090",
			[]string{"API       http://127.0.0.1:8081\n", "Metrics   http://127.0.0.1:9090/metrics"}, []string{"[::]", "0.0.0.0"}},
		{"public URL", "https://sms.example.com", "127.0.0.1:8080", "",
			[]string{"Dashboard https://sms.example.com/app/\n", "API       https://sms.example.com\n", "https://sms.example.com/openapi.json", "https://sms.example.com/readyz",
				"Metrics   https://sms.example.com/metrics"}, []string{"127.0.0.1"}},
	} {
		var b strings.Builder
		if err := printBanner(&b, c.public, c.listen, c.internal); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: banner lacks %q:\n%s", c.name, w, b.String())
			}
		}
		for _, w := range c.wantNot {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: banner has %q:\n%s", c.name, w, b.String())
			}
		}
	}
}

// tuma serve --banner prints the address the node really listens on (port 0 here), before it
// boots (this one is stopped at once, so it needs no store).
func TestServeBannerShowsTheListener(t *testing.T) {
	env := map[string]string{"TUMA_HTTP_ADDR": "127.0.0.1:0", "TUMA_DATABASE_URL": "postgres://127.0.0.1:1/none", "TUMA_REDIS_URL": "redis://127.0.0.1:1/0"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errs bytes.Buffer
	if err := run(ctx, []string{"serve", "--banner"}, &out, &errs, lookup); err != nil {
		t.Fatalf("serve --banner, stopped at once: %v\n%s", err, errs.String())
	}
	_, api, _ := strings.Cut(out.String(), "  API       ")
	api, _, _ = strings.Cut(api, "\n")
	if !strings.HasPrefix(api, "http://127.0.0.1:") || strings.HasSuffix(api, ":0") || !strings.Contains(out.String(), api+"/openapi.json") {
		t.Errorf("banner = %q; want the port the node listens on", out.String())
	}
	if err := run(ctx, []string{"serve", "--frobnicate"}, &out, &errs, lookup); err == nil {
		t.Error("serve --frobnicate was accepted")
	}
}

// make run leaves the addresses to the node's banner: none is written into the Makefile.
func TestMakeRunPrintsTheNodesBanner(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	cmd := exec.Command("make", "-n", "run")
	cmd.Dir = "../.."
	cmd.Env = append(cmd.Environ(), "TUMA_HTTP_ADDR=127.0.0.1:9999")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "serve --banner") || strings.Contains(string(out), "127.0.0.1:8080") {
		t.Errorf("make run with TUMA_HTTP_ADDR=127.0.0.1:9999 does:\n%s\nwant serve --banner and no address of its own", out)
	}
}
