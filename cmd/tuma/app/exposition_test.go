package app_test

// Every metric the rules and the dashboard use exists on a real node (see deploy_test.go).

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

func TestDeployMetricsExist(t *testing.T) {
	// Gather what the rules and the dashboard use first: no node needed to fail on that.
	type use struct{ where, expr string }
	var uses []use
	recorded := map[string]bool{}
	for _, r := range loadRules(t) {
		uses = append(uses, use{"alerts.yml " + r.name(), r.expr})
		if r.record != "" {
			recorded[r.record] = true
		}
	}
	exprs, varMetrics := dashboardExprs(loadDashboard(t))
	for where, e := range exprs {
		uses = append(uses, use{"tuma.json " + where, e})
	}
	for _, m := range varMetrics {
		uses = append(uses, use{"tuma.json variable", m})
	}

	// A node that has sent and delivered on every network, over SMPP binds (so the binds'
	// series exist too), serves the tenants' SMPP server, and answered a 4xx.
	env := startSMSCs(t, smpp.SMSCConfig{ReceiptTLVs: true}).env("")
	env["TUMA_SMPP_SERVER_ADDR"] = "127.0.0.1:0" // the tenants' SMPP server's series too
	n := startNode(t, env)
	a := n.register("sre@example.com")
	n.credit(a, "100")
	if r := n.send(a, map[string]any{"recipients": []string{"0712000001", "0733000001", "0770000001"}, "message": "hi"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	n.waitDone(a, 3)
	n.do("GET", "/auth/me", nil)
	r := n.do("GET", "/metrics", nil)
	if r.Status != 200 {
		t.Fatalf("/metrics = %d", r.Status)
	}
	expo := parseExposition(t, r.Body)

	used := map[string]bool{}
	for _, u := range uses {
		sels, err := promqlSelectors(u.expr)
		if err != nil {
			t.Errorf("%s: %v", u.where, err)
			continue
		}
		for _, s := range sels {
			if recorded[s.name] {
				continue
			}
			used[s.name] = true
			switch {
			case notExportedByTuma[s.name] != "":
				continue
			case !expo.has(s.name):
				t.Errorf("%s: metric %s is not exported by Tuma", u.where, s.name)
				continue
			}
			// Exact label matchers must match a real series (route templates, bucket bounds …);
			// job and instance come from Prometheus, $variables from Grafana.
			var exact []promMatcher
			for _, m := range s.matchers {
				if m.op == "=" && m.label != "job" && m.label != "instance" && !strings.Contains(m.value, "$") {
					exact = append(exact, m)
				}
			}
			if !expo.hasSeries(s.name, exact) {
				var sel []string
				for _, m := range exact {
					sel = append(sel, fmt.Sprintf("%s=%q", m.label, m.value))
				}
				t.Errorf("%s: no series %s{%s} on /metrics", u.where, s.name, strings.Join(sel, ","))
			}
		}
	}
	for name := range notExportedByTuma {
		if name != "up" && expo.has(name) {
			t.Errorf("%s is exported now: remove it from notExportedByTuma in deploy_test.go", name)
		}
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Logf("metrics used by deploy/: %s", strings.Join(names, " "))
}

// exposition indexes a Prometheus text exposition: each sample name with its label sets.
type exposition struct {
	types   map[string]string // family → counter, gauge, histogram, summary, untyped
	samples map[string][]map[string]string
}

func parseExposition(t *testing.T, body []byte) exposition {
	t.Helper()
	e := exposition{types: map[string]string{}, samples: map[string][]map[string]string{}}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				e.types[f[0]] = f[1]
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, err := parseExpositionSample(line)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		e.samples[name] = append(e.samples[name], labels)
	}
	return e
}

// has reports whether name can be queried: a sample name, or a histogram or summary family.
func (e exposition) has(name string) bool {
	if len(e.samples[name]) > 0 {
		return true
	}
	t := e.types[name]
	return t == "histogram" || t == "summary"
}

// hasSeries reports whether a sample of name has every label value of ms (equality matchers).
func (e exposition) hasSeries(name string, ms []promMatcher) bool {
	if len(ms) == 0 {
		return true
	}
next:
	for _, ls := range e.samples[name] {
		for _, m := range ms {
			if v, ok := ls[m.label]; !ok || v != m.value {
				continue next
			}
		}
		return true
	}
	return false
}

// parseExpositionSample splits `name{a="b",c="d"} value` into the name and its labels.
func parseExpositionSample(line string) (string, map[string]string, error) {
	labels := map[string]string{}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, fmt.Errorf("no sample name")
	}
	name := line[:i]
	if line[i] == ' ' {
		return name, labels, nil
	}
	s := line[i+1:]
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return name, labels, nil
		}
		eq := strings.Index(s, `="`)
		if eq <= 0 {
			return "", nil, fmt.Errorf("bad label list")
		}
		key := s[:eq]
		s = s[eq+2:]
		var v strings.Builder
		j := 0
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' && j+1 < len(s) {
				j++
				if s[j] == 'n' {
					v.WriteByte('\n')
					continue
				}
			}
			v.WriteByte(s[j])
		}
		if j == len(s) {
			return "", nil, fmt.Errorf("unterminated label value")
		}
		labels[key] = v.String()
		s = s[j+1:]
	}
}
