package app_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeCall is one curl command of the README: its path, its JSON body and its headers.
type readmeCall struct {
	path    string
	body    string
	headers []string
}

// readmeCalls returns the README's curl commands to path (continuation lines joined).
func readmeCalls(t *testing.T, method, path string) []readmeCall {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	body := regexp.MustCompile(`-d '([^']*)'`)
	header := regexp.MustCompile(`-H '([^']*)'|-H "([^"]*)"`)
	var out []readmeCall
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "curl ") || !strings.Contains(line, "-X "+method+" ") ||
			!strings.Contains(line, "8080"+path+" ") {
			continue
		}
		c := readmeCall{path: path}
		if m := body.FindStringSubmatch(line); m != nil {
			c.body = m[1]
		}
		for _, m := range header.FindAllStringSubmatch(line, -1) {
			c.headers = append(c.headers, m[1]+m[2])
		}
		out = append(out, c)
	}
	return out
}

// The README shows a newcomer how to send (issue 31, defect 3), and its example works as
// written: the body and headers of its POST /sms/send, sent by a funded account, answer 202 and
// the message is delivered.
func TestREADMESendExampleWorks(t *testing.T) {
	calls := readmeCalls(t, "POST", "/sms/send")
	if len(calls) == 0 {
		t.Fatal("README.md has no curl -X POST …/sms/send example")
	}
	n := startNode(t, fastSims)
	a := n.register("readme@example.com")
	n.credit(a, "100")
	for _, c := range calls {
		var body map[string]any
		if err := json.Unmarshal([]byte(c.body), &body); err != nil {
			t.Fatalf("the README's send body %q is not JSON: %v", c.body, err)
		}
		var headers []string
		for _, h := range c.headers {
			k, v, _ := strings.Cut(h, ": ")
			switch k {
			case "X-API-Key":
				v = a.APIKey
			case "Content-Type":
				continue // the harness sends JSON
			}
			headers = append(headers, k, v)
		}
		r := n.do("POST", c.path, body, headers...)
		if r.Status != 202 {
			t.Fatalf("the README's send answers %d %s", r.Status, r.Body)
		}
		job := r.json(t)["job_id"].(string)
		deadline := time.Now().Add(30 * time.Second)
		for {
			list := n.do("GET", "/sms/messages?job_id="+job, nil, key(a)...).json(t)
			data := list["data"].([]any)
			if len(data) > 0 && data[0].(map[string]any)["status"] == "delivered" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the README's message is not delivered: %v", list)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
