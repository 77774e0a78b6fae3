package bench

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func env(kv ...string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

func TestParseArgsDefaults(t *testing.T) {
	for _, s := range Scenarios() {
		args := []string{"--scenario", s}
		if s == ScenarioThrottled {
			args = append(args, "--caps", "safaricom=100,airtel=50,telkom=20")
		}
		c, err := ParseArgs(args, env(), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want := DefaultConfig(s)
		if c.Accounts != want.Accounts || c.Concurrency != want.Concurrency || c.Duration != want.Duration ||
			c.Rate != want.Rate || c.Recipients != want.Recipients {
			t.Errorf("%s: %+v; want the scenario's defaults %+v", s, c, want)
		}
		if c.URL != "http://127.0.0.1:8080" || c.AdminToken != "dev-admin-token-change-me" {
			t.Errorf("%s: url %q token %q", s, c.URL, c.AdminToken)
		}
	}
}

func TestParseArgsOverrides(t *testing.T) {
	c, err := ParseArgs([]string{"--scenario", "bulk", "--url", "http://10.0.0.2:9000/", "--accounts", "3",
		"--concurrency", "2", "--duration", "45s", "--rate", "0", "--recipients", "500", "--json", "out.json",
		"--keep", "--timeout", "2m", "--fund-kes", "5000"}, env("TUMA_ADMIN_TOKEN", "from-env"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "http://10.0.0.2:9000/" || c.Accounts != 3 || c.Concurrency != 2 || c.Duration != 45*time.Second ||
		c.Rate != 0 || c.Recipients != 500 || c.JSONPath != "out.json" || !c.Keep || c.Timeout != 2*time.Minute ||
		c.FundKES != 5000 || c.AdminToken != "from-env" {
		t.Errorf("config = %+v", c)
	}
	c, err = ParseArgs([]string{"--scenario", "small", "--admin-token", "flag-wins"}, env("TUMA_ADMIN_TOKEN", "from-env"), &bytes.Buffer{})
	if err != nil || c.AdminToken != "flag-wins" {
		t.Errorf("token = %q, %v", c.AdminToken, err)
	}
	if f := c.flags(); f["scenario"] != "small" || f["accounts"] != "64" {
		t.Errorf("flags = %v", f)
	}
	if _, ok := c.flags()["admin-token"]; ok {
		t.Error("flags must not carry the admin token")
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"--scenario is required"}},
		{[]string{"--scenario", "huge"}, []string{"--scenario must be one of"}},
		{[]string{"--scenario", "small", "--url", "127.0.0.1:8080"}, []string{"--url"}},
		{[]string{"--scenario", "small", "--accounts", "0", "--concurrency", "-1"}, []string{"--accounts", "--concurrency"}},
		{[]string{"--scenario", "small", "--duration", "0s"}, []string{"--duration must be positive"}},
		{[]string{"--scenario", "soak", "--rate", "0"}, []string{"--rate must be positive for the soak"}},
		{[]string{"--scenario", "small", "--rate", "NaN"}, []string{"--rate"}},
		{[]string{"--scenario", "bulk", "--recipients", "10001"}, []string{"--recipients must be from 1 to 10000"}},
		{[]string{"--scenario", "mixed", "--recipients", "50"}, []string{"at least 100 for the mixed"}},
		{[]string{"--scenario", "throttled"}, []string{"--caps is required"}},
		{[]string{"--scenario", "throttled", "--caps", "20", "--duration", "3s"}, []string{"at least 6s"}},
		{[]string{"--scenario", "small", "--caps", "vodafone=5"}, []string{"vodafone"}},
		{[]string{"--scenario", "small", "--fund-kes", "2000000"}, []string{"--fund-kes"}},
		{[]string{"--scenario", "small", "--admin-token", ""}, []string{"--admin-token is required"}},
		{[]string{"--scenario", "bulk", "--webhooks", "9901"}, []string{"--webhooks must be a listen address"}},
		{[]string{"--scenario", "bulk", "--webhooks", ":9901", "--webhook-batch", "101"}, []string{"--webhook-batch must be from 1 to 100"}},
		{[]string{"--scenario", "small", "extra"}, []string{"unexpected argument"}},
		{[]string{"--scenario", "small", "--nope"}, []string{"not defined"}},
	} {
		_, err := ParseArgs(tc.args, env(), &bytes.Buffer{})
		if err == nil {
			t.Errorf("%q: want an error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tc.args, err, w)
			}
		}
	}
	var out bytes.Buffer
	if _, err := ParseArgs([]string{"-h"}, env(), &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "tuma-lab bench compare") {
		t.Errorf("-h = %v, %q", err, out.String())
	}
}

func TestParseCaps(t *testing.T) {
	c, err := ParseCaps(" safaricom=100, airtel=50 ,telkom=20.5")
	if err != nil || c[carriers.Safaricom] != 100 || c[carriers.Airtel] != 50 || c[carriers.Telkom] != 20.5 {
		t.Fatalf("caps = %v, %v", c, err)
	}
	if s := c.String(); s != "safaricom=100,airtel=50,telkom=20.5" {
		t.Errorf("String = %q", s)
	}
	if c, err := ParseCaps("50"); err != nil || len(c) != 3 || c[carriers.Telkom] != 50 {
		t.Errorf("one number = %v, %v", c, err)
	}
	if c, err := ParseCaps("airtel=5"); err != nil || c.Empty() || c[carriers.Safaricom] != 0 {
		t.Errorf("one network = %v, %v", c, err)
	}
	if c, err := ParseCaps(""); err != nil || !c.Empty() {
		t.Errorf("empty = %v, %v", c, err)
	}
	for _, bad := range []string{"0", "-3", "safaricom", "safaricom=0", "safaricom=x", "orange=5", "airtel=1,airtel=2", "Safaricom=5"} {
		if _, err := ParseCaps(bad); err == nil {
			t.Errorf("ParseCaps(%q): want an error", bad)
		}
	}
}
