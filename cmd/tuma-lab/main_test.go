package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every command and subcommand of the lab answers -h with its usage, and nothing runs.
func TestHelp(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "tuma-lab command"},
		{[]string{"bench", "-h"}, "tuma-lab bench --scenario NAME"},
		{[]string{"bench", "compare", "-h"}, "threshold"},
		{[]string{"bench", "contacts", "-h"}, "tuma-lab bench contacts"},
		{[]string{"bench", "campaign", "-h"}, "tuma-lab bench campaign"},
		{[]string{"bench", "dashboard", "-h"}, "tuma-lab bench dashboard"},
		{[]string{"bench", "kannel", "-h"}, "tuma-lab bench kannel"},
		{[]string{"bench", "smpp", "-h"}, "tuma-lab bench smpp"},
		{[]string{"drill", "-h"}, "reliability drills"},
		{[]string{"security", "-h"}, "tuma-lab security"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), c.args, &out, &out, none); err != nil || !strings.Contains(out.String(), c.want) {
			t.Errorf("tuma-lab %s = %v\n%s\nwant its usage (%q)", strings.Join(c.args, " "), err, out.String(), c.want)
		}
	}
}

func TestCommandErrors(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	var out bytes.Buffer
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"serve"}, "unknown command"},
		{[]string{"bench", "summary"}, "result files"},
		{[]string{"bench", "headline"}, "result files"},
		{[]string{"drill", "--only", "nap"}, "unknown drill"},
		{[]string{"security", "--only", "security"}, "not defined"},
	} {
		if err := run(context.Background(), c.args, &out, &out, none); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tuma-lab %s = %v; want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
