package app_test

// The Grafana dashboard and its provisioning (the SRE pack: see deploy_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
