package app_test

// Tests of the SRE pack in deploy/: the Prometheus rules, the Grafana dashboard and their
// provisioning. The rules and the dashboard may only use metrics a real node exports, every
// alert needs a severity, a summary, a description and a runbook section in deploy/README.md,
// and the rules must pass `promtool check` and their unit tests (promtool is required when CI
// is set; deploy/dev/test-tools.sh fetches it).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tuma-sms/tuma/carriers/smpp"
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

// ---------------------------------------------------------------------------------------
// Dashboard and provisioning

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		Datasource *grafanaDatasource `json:"datasource"`
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      any                `json:"query"`
			Definition string             `json:"definition"`
			Datasource *grafanaDatasource `json:"datasource"`
			Current    struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	var d grafanaDashboard
	dec := json.NewDecoder(bytes.NewReader(readDeployFile(t, "grafana", "dashboards", "tuma.json")))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("tuma.json: %v", err)
	}
	return d
}

// dashboardPanels returns every panel that is not a row, rows' nested panels included.
func dashboardPanels(d grafanaDashboard) []grafanaPanel {
	var out []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// dashboardExprs returns the PromQL of every panel target, and the metrics the template
// variables query (label_values(metric, label)).
func dashboardExprs(d grafanaDashboard) (exprs map[string]string, varMetrics []string) {
	exprs = map[string]string{}
	for _, p := range dashboardPanels(d) {
		for _, tg := range p.Targets {
			exprs[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	lv := regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)
	for _, v := range d.Templating.List {
		if m := lv.FindStringSubmatch(v.Definition); m != nil {
			varMetrics = append(varMetrics, m[1])
		}
	}
	return exprs, varMetrics
}

func TestDeployDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard uid %q title %q schemaVersion %d; want a uid, a title and a Grafana 10+ schema", d.UID, d.Title, d.SchemaVersion)
	}
	dsVar := false
	for _, v := range d.Templating.List {
		if v.Name == "DS_PROMETHEUS" {
			dsVar = v.Type == "datasource" && v.Query == "prometheus" && v.Current.Value == dashboardDatasourceUID
		} else if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${DS_PROMETHEUS}") {
			t.Errorf("variable %s: datasource %+v; want ${DS_PROMETHEUS}", v.Name, v.Datasource)
		}
	}
	if !dsVar {
		t.Errorf("dashboard needs a datasource variable DS_PROMETHEUS (query prometheus, current %q)", dashboardDatasourceUID)
	}
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("panel %q: id %d missing or used twice", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.Title == "" || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %d %q: needs a title and a gridPos within 24 columns (%+v)", p.ID, p.Title, p.GridPos)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	panels := dashboardPanels(d)
	if len(panels) < 20 {
		t.Errorf("%d panels; the dashboard lost most of them", len(panels))
	}
	for _, p := range panels {
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q: datasource %+v; want prometheus ${DS_PROMETHEUS}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s: empty expr", p.Title, tg.RefID)
			}
			if tg.Datasource != nil && tg.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q target %s: datasource %+v", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
	exprs, _ := dashboardExprs(d)
	for where, e := range exprs {
		if _, err := promqlSelectors(e); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
}

func TestDeployProvisioning(t *testing.T) {
	get := func(v any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				m, _ := v.(map[string]any)
				v = m[k]
			case int:
				l, _ := v.([]any)
				if k >= len(l) {
					return nil
				}
				v = l[k]
			}
		}
		return v
	}
	load := func(parts ...string) any {
		doc, err := parseYAML(readDeployFile(t, parts...))
		if err != nil {
			t.Fatalf("%s: %v", filepath.Join(parts...), err)
		}
		return doc
	}

	ds := load("grafana", "provisioning", "datasources", "prometheus.yml")
	if get(ds, "datasources", 0, "uid") != dashboardDatasourceUID || get(ds, "datasources", 0, "type") != "prometheus" ||
		get(ds, "datasources", 0, "url") != "http://prometheus:9090" {
		t.Errorf("datasource provisioning = %v; want prometheus uid %q at http://prometheus:9090", ds, dashboardDatasourceUID)
	}
	dash := load("grafana", "provisioning", "dashboards", "tuma.yml")
	if get(dash, "providers", 0, "options", "path") != "/etc/grafana/dashboards" {
		t.Errorf("dashboard provider = %v; want path /etc/grafana/dashboards", dash)
	}
	prom := load("prometheus", "prometheus.yml")
	if get(prom, "rule_files", 0) != "alerts.yml" || get(prom, "scrape_configs", 0, "job_name") != "tuma" ||
		get(prom, "scrape_configs", 0, "metrics_path") != "/metrics" ||
		get(prom, "scrape_configs", 0, "static_configs", 0, "targets", 0) != "tuma:8080" {
		t.Errorf("prometheus.yml = %v; want job tuma scraping tuma:8080/metrics and rule file alerts.yml", prom)
	}
	// The compose profile mounts what the provisioning expects.
	compose, err := os.ReadFile(filepath.Join("..", "..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro",
		"./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro",
		"./deploy/grafana/provisioning:/etc/grafana/provisioning:ro",
		"./deploy/grafana/dashboards:/etc/grafana/dashboards:ro",
		`"127.0.0.1:9090:9090"`, `"127.0.0.1:3000:3000"`,
	} {
		if !strings.Contains(string(compose), want) {
			t.Errorf("docker-compose.yml lacks %s", want)
		}
	}
	if n := strings.Count(string(compose), `profiles: ["observability"]`); n != 2 {
		t.Errorf("docker-compose.yml: %d services in the observability profile; want prometheus and grafana", n)
	}
}

// ---------------------------------------------------------------------------------------
// Every metric used exists on a real node

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
	// series exist too), and answered a 4xx.
	n := startNode(t, startSMSCs(t, smpp.SMSCConfig{ReceiptTLVs: true}).env(""))
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

// ---------------------------------------------------------------------------------------
// PromQL: the metric selectors of an expression

type promMatcher struct{ label, op, value string }

type promSelector struct {
	name     string
	matchers []promMatcher
}

// promqlKeywords are identifiers that are not metric names: aggregation operators (which may
// be followed by by/without before their parenthesis), set and comparison keywords, modifiers.
var promqlKeywords = map[string]bool{
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true,
	"stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true,
	"limit_ratio": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "offset": true, "bool": true, "and": true, "or": true, "unless": true,
	"atan2": true, "inf": true, "nan": true,
}

// promqlLabelLists are keywords followed by a parenthesised list of label names.
var promqlLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

var promqlFunctions = wordSet(`abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil
	changes clamp clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month
	deg delta deriv double_exponential_smoothing exp floor histogram_avg histogram_count histogram_fraction
	histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase info irate
	label_join label_replace last_over_time ln log10 log2 mad_over_time max_over_time min_over_time minute month pi
	predict_linear present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_by_label
	sort_by_label_desc sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year`)

func wordSet(words string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(words) {
		out[w] = true
	}
	return out
}

// promqlSelectors returns the metric selectors of a PromQL expression (Grafana's $variables
// allowed). It is a scanner, not a parser: strings, ranges and label lists are skipped, an
// identifier followed by ( must be a known function, and any other identifier that is not a
// keyword is a metric name.
func promqlSelectors(expr string) ([]promSelector, error) {
	var out []promSelector
	s := expr
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		return i
	}
	// skipString returns the index after the string literal starting at i.
	skipString := func(i int) (int, error) {
		q := s[i]
		for j := i + 1; j < len(s); j++ {
			if s[j] == '\\' && q != '`' {
				j++
				continue
			}
			if s[j] == q {
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string in %q", expr)
	}
	// closing returns the index after the bracket closing the one at i, strings skipped.
	closing := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(s); {
			switch c := s[j]; {
			case c == '"' || c == '\'' || c == '`':
				k, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = k
				continue
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, fmt.Errorf("unbalanced %c in %q", open, expr)
	}
	matcherRe := regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`" + `)\s*(,|$)`)
	parseMatchers := func(body string) ([]promMatcher, error) {
		var ms []promMatcher
		for strings.TrimSpace(body) != "" {
			m := matcherRe.FindStringSubmatch(body)
			if m == nil {
				return nil, fmt.Errorf("bad label matchers {%s} in %q", body, expr)
			}
			v := m[3][1 : len(m[3])-1]
			if m[3][0] != '`' {
				v = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\'`, `'`).Replace(v)
			}
			ms = append(ms, promMatcher{m[1], m[2], v})
			body = body[len(m[0]):]
		}
		return ms, nil
	}

	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced ) in %q", expr)
			}
			i++
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{':
			return nil, fmt.Errorf("selector without a metric name in %q", expr)
		case c == '[':
			j, err := closing(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '$': // a Grafana variable: $name or ${name}
			i++
			if i < len(s) && s[i] == '{' {
				j, err := closing(i, '{', '}')
				if err != nil {
					return nil, err
				}
				i = j
			}
			for i < len(s) && isIdent(s[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') { // numbers, durations, 1e3, 0x1f
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			next := skipSpace(j)
			switch {
			case promqlKeywords[word]:
				i = j
				if promqlLabelLists[word] && next < len(s) && s[next] == '(' {
					k, err := closing(next, '(', ')')
					if err != nil {
						return nil, err
					}
					i = k
				}
			case next < len(s) && s[next] == '(':
				if !promqlFunctions[word] {
					return nil, fmt.Errorf("unknown function %s in %q", word, expr)
				}
				i = j
			default:
				sel := promSelector{name: word}
				i = j
				if next < len(s) && s[next] == '{' {
					k, err := closing(next, '{', '}')
					if err != nil {
						return nil, err
					}
					ms, err := parseMatchers(s[next+1 : k-1])
					if err != nil {
						return nil, err
					}
					sel.matchers = ms
					i = k
				}
				out = append(out, sel)
			}
		default:
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced ( in %q", expr)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no metric in %q", expr)
	}
	return out, nil
}

func TestDeployPromQLScanner(t *testing.T) {
	names := func(sels []promSelector) []string {
		var out []string
		for _, s := range sels {
			out = append(out, s.name)
		}
		return out
	}
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`up{job="tuma"} == 0`, []string{"up"}},
		{`sum by (network, le) (rate(a_bucket{route="/x{y}",le="0.06"}[5m])) / on (network) group_left (x) sum(b) > bool 0.5`, []string{"a_bucket", "b"}},
		{`increase(c_total[10m]) > 0 or (c_total > 0 unless c_total offset 10m)`, []string{"c_total", "c_total", "c_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(d_bucket{instance=~"$instance"}[$__rate_interval]))) * 1e3`, []string{"d_bucket"}},
		{`tuma:ratio_rate5m > (14.4 * 0.01)`, []string{"tuma:ratio_rate5m"}},
		{`max without (kind) (e) - e offset 1h30m`, []string{"e", "e"}},
	} {
		sels, err := promqlSelectors(tt.expr)
		if err != nil || !slices.Equal(names(sels), tt.want) {
			t.Errorf("promqlSelectors(%q) = %v, %v; want %v", tt.expr, names(sels), err, tt.want)
		}
	}
	sels, _ := promqlSelectors(`a{b="c",d=~"e|f", g != 'h'}`)
	if want := []promMatcher{{"b", "=", "c"}, {"d", "=~", "e|f"}, {"g", "!=", "h"}}; len(sels) != 1 || !slices.Equal(sels[0].matchers, want) {
		t.Errorf("matchers = %+v; want %+v", sels, want)
	}
	for _, bad := range []string{`rat(x[5m])`, `x{a="b"`, `sum(x`, `{a="b"}`, `x{a}`} {
		if _, err := promqlSelectors(bad); err == nil {
			t.Errorf("promqlSelectors(%q) accepted", bad)
		}
	}
}

// ---------------------------------------------------------------------------------------

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
