package app_test

// Tests of the SRE pack in deploy/: the Prometheus rules, the Grafana dashboard and their
// provisioning. The rules and the dashboard may only use metrics a real node exports, every
// alert needs a severity, a summary, a description and a runbook section in deploy/README.md,
// and the rules must pass `promtool check` and their unit tests (promtool is required when CI
// is set; deploy/dev/test-tools.sh fetches it).

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deployFile is a path under deploy/ (tests run in cmd/tuma/app).
func deployFile(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "..", "deploy"}, parts...)...)
}

func readDeployFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(deployFile(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const runbookURLPrefix = "https://github.com/tuma-sms/tuma/blob/main/deploy/README.md#"

// dashboardDatasourceUID is the uid of the provisioned Prometheus data source; the dashboard
// refers to it through its DS_PROMETHEUS variable.
const dashboardDatasourceUID = "prometheus"

// notExportedByTuma are metric names the rules may use although no node exports them.
var notExportedByTuma = map[string]string{
	"up": "Prometheus's own scrape health series",
}

// ---------------------------------------------------------------------------------------
// Alert rules

type promRule struct {
	group, alert, record, expr, forDur string
	labels, annotations                map[string]string
}

func (r promRule) name() string { return r.alert + r.record }

func loadRules(t *testing.T) []promRule {
	t.Helper()
	doc, err := parseYAML(readDeployFile(t, "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	top, ok := doc.(map[string]any)
	if !ok || len(top) != 1 {
		t.Fatalf("alerts.yml: want a mapping with only groups, got %T %v", doc, deployKeys(top))
	}
	groups, ok := top["groups"].([]any)
	if !ok || len(groups) == 0 {
		t.Fatal("alerts.yml: groups must be a non-empty list")
	}
	var rules []promRule
	groupNames := map[string]bool{}
	for gi, g := range groups {
		gm, ok := g.(map[string]any)
		name, _ := gm["name"].(string)
		list, _ := gm["rules"].([]any)
		if !ok || name == "" || len(list) == 0 {
			t.Fatalf("alerts.yml: group %d needs a name and rules", gi)
		}
		if groupNames[name] {
			t.Errorf("alerts.yml: group %q twice", name)
		}
		groupNames[name] = true
		for ri, r := range list {
			rm, ok := r.(map[string]any)
			if !ok {
				t.Fatalf("alerts.yml: group %s rule %d is not a mapping", name, ri)
			}
			pr := promRule{group: name, labels: map[string]string{}, annotations: map[string]string{}}
			for k, v := range rm {
				switch k {
				case "alert", "record", "expr", "for", "keep_firing_for":
					s, ok := v.(string)
					if !ok {
						t.Fatalf("alerts.yml: group %s rule %d: %s is not a string", name, ri, k)
					}
					switch k {
					case "alert":
						pr.alert = s
					case "record":
						pr.record = s
					case "expr":
						pr.expr = strings.TrimSpace(s)
					case "for":
						pr.forDur = s
					}
				case "labels", "annotations":
					m, ok := v.(map[string]any)
					if !ok {
						t.Fatalf("alerts.yml: group %s rule %d: %s is not a mapping", name, ri, k)
					}
					for lk, lv := range m {
						s, ok := lv.(string)
						if !ok {
							t.Fatalf("alerts.yml: group %s rule %d: %s.%s is not a string", name, ri, k, lk)
						}
						if k == "labels" {
							pr.labels[lk] = s
						} else {
							pr.annotations[lk] = s
						}
					}
				default:
					t.Errorf("alerts.yml: group %s rule %d: unknown key %q", name, ri, k)
				}
			}
			rules = append(rules, pr)
		}
	}
	return rules
}

func TestDeployAlertRules(t *testing.T) {
	rules := loadRules(t)
	anchors := readmeAnchors(t)
	durRe := regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	seen := map[string]bool{}
	alerts := 0
	for _, r := range rules {
		if (r.alert == "") == (r.record == "") {
			t.Errorf("group %s: a rule needs exactly one of alert and record (%q, %q)", r.group, r.alert, r.record)
			continue
		}
		if seen[r.name()] {
			t.Errorf("rule %s defined twice", r.name())
		}
		seen[r.name()] = true
		if r.expr == "" {
			t.Errorf("%s: empty expr", r.name())
		} else if _, err := promqlSelectors(r.expr); err != nil {
			t.Errorf("%s: %v", r.name(), err)
		}
		if r.record != "" {
			if !regexp.MustCompile(`^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$`).MatchString(r.record) {
				t.Errorf("recording rule %s: want level:metric:operations", r.record)
			}
			continue
		}
		alerts++
		if !regexp.MustCompile(`^Tuma[A-Za-z0-9]+$`).MatchString(r.alert) {
			t.Errorf("alert %s: names are TumaCamelCase", r.alert)
		}
		if !durRe.MatchString(r.forDur) {
			t.Errorf("%s: for: %q; every alert needs a duration", r.alert, r.forDur)
		}
		if s := r.labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q; want critical or warning", r.alert, s)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.annotations[a]) == "" {
				t.Errorf("%s: annotation %s missing", r.alert, a)
			}
		}
		if u := r.annotations["runbook_url"]; !strings.HasPrefix(u, runbookURLPrefix) {
			t.Errorf("%s: runbook_url %q; want %s<anchor>", r.alert, u, runbookURLPrefix)
		} else if a := strings.TrimPrefix(u, runbookURLPrefix); !anchors[a] {
			t.Errorf("%s: runbook anchor #%s has no heading in deploy/README.md", r.alert, a)
		} else if a != strings.ToLower(r.alert) {
			t.Errorf("%s: runbook anchor #%s; want #%s (a heading named after the alert)", r.alert, a, strings.ToLower(r.alert))
		}
	}
	// Every alert heading of the runbook belongs to an alert.
	for _, h := range readmeAlertHeadings(t) {
		if !seen[h] {
			t.Errorf("deploy/README.md documents %s, which alerts.yml does not define", h)
		}
	}
	// The rules the operators asked for.
	for _, want := range []string{"TumaDown", "TumaPostgresDown", "TumaRedisDown", "TumaHTTP5xxRateHigh",
		"TumaSendLatencyBudgetBurn", "TumaLinkBreakerOpen", "TumaDeliveryRatioLow", "TumaLinkQueueStalled",
		"TumaReceiptsQueueGrowing", "TumaJobsWaitingGrowing", "TumaActorRestarts", "TumaDBBatchErrors", "TumaSMPPBindDown"} {
		if !seen[want] {
			t.Errorf("alert %s missing", want)
		}
	}
	t.Logf("%d rules, %d alerts", len(rules), alerts)

	// promtool, when installed, is the authority on syntax and runs the rule unit tests.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not on PATH (CI is set, so this fails): deploy/dev/test-tools.sh fetches it")
		}
		t.Log("promtool not on PATH: promtool check/test rules not run (deploy/dev/test-tools.sh fetches it)")
		return
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = deployFile("prometheus")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// readmeAnchors returns the GitHub anchors of deploy/README.md's headings.
func readmeAnchors(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	fenced := false
	for _, line := range strings.Split(string(readDeployFile(t, "README.md")), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if h, ok := strings.CutPrefix(line, "#"); ok && !fenced {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}

// readmeAlertHeadings returns the ### headings of the README's "## Alerts" section.
func readmeAlertHeadings(t *testing.T) []string {
	t.Helper()
	var out []string
	in := false
	for _, line := range strings.Split(string(readDeployFile(t, "README.md")), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line[3:]) == "Alerts"
		case in && strings.HasPrefix(line, "### "):
			out = append(out, strings.TrimSpace(line[4:]))
		}
	}
	if len(out) == 0 {
		t.Error(`deploy/README.md has no "## Alerts" section with ### headings`)
	}
	return out
}

// parseYAML reads one of deploy/'s YAML files into maps, lists and scalars.
func parseYAML(data []byte) (any, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func deployMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func deployKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
