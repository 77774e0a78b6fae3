package app

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.PublicURL != "http://127.0.0.1:8080" || c.DashboardURL != "http://127.0.0.1:8080/app/" ||
		c.RedisURL != "redis://127.0.0.1:6379/0" || c.SharedSenderID != "TUMA" || c.Carriers != "sim" ||
		c.PaymentProvider != "sandbox" || c.MailFrom != "Tuma <no-reply@localhost>" || c.AdminToken != "" ||
		!strings.HasSuffix(strings.Split(c.DatabaseURL, "?")[0], "/tuma") || c.RequestTimeout != 30*time.Second {
		t.Errorf("defaults = %+v", c)
	}
	if !c.JWTSecretGenerated || len(c.JWTSecret) < 32 {
		t.Error("development default should generate a JWT secret")
	}
}

func TestLoadConfigNamesTheBadVariable(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"TUMA_HTTP_ADDR": "8080"}, "TUMA_HTTP_ADDR"},
		{map[string]string{"TUMA_DATABASE_URL": "mysql://x"}, "TUMA_DATABASE_URL"},
		{map[string]string{"TUMA_REQUEST_TIMEOUT": "soon"}, "TUMA_REQUEST_TIMEOUT"},
		{map[string]string{"TUMA_PAYMENT_PROVIDER": "mpesa"}, "TUMA_PAYMENT_PROVIDER"},
		{map[string]string{"TUMA_JWT_SECRET": "short"}, "TUMA_JWT_SECRET"},
		{map[string]string{"TUMA_ENV": "production"}, "TUMA_JWT_SECRET"},
		{map[string]string{"TUMA_ENV": "production", "TUMA_JWT_SECRET": strings.Repeat("s", 32), "TUMA_PAYMENT_PROVIDER": "paystack"},
			"TUMA_PAYMENT_SECRET_KEY"},
		{map[string]string{"TUMA_SHARED_SENDER_ID": "TOO LONG NAME"}, "TUMA_SHARED_SENDER_ID"},
		{map[string]string{"TUMA_LOG_LEVEL": "loud"}, "TUMA_LOG_LEVEL"},
		{map[string]string{"TUMA_JOB_WINDOW": "-1"}, "TUMA_JOB_WINDOW"},
		{map[string]string{"TUMA_SMPP_AIRTEL": "smpp://tuma:pw@host"}, "TUMA_SMPP_AIRTEL"},
		{map[string]string{"TUMA_CARRIERS": "smpp", "TUMA_SMPP_SAFARICOM": "smpp://a:b@h:1"}, "TUMA_SMPP_AIRTEL"},
		{map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1"}, "TUMA_CLUSTER_ADDR"},
		{map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1:65535"}, "TUMA_CLUSTER_ADDR"}, // no port left for its health checks
		{map[string]string{"TUMA_CLUSTER_PEERS": "127.0.0.1:7101,nowhere"}, "TUMA_CLUSTER_PEERS"},
		{map[string]string{"TUMA_CLUSTER_PEERS": "127.0.0.1:7101"}, "TUMA_CLUSTER_ADDR"},
		{map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1:7101", "TUMA_CLUSTER_PEERS": "127.0.0.1:7111",
			"TUMA_JWT_SECRET": strings.Repeat("s", 32)}, "TUMA_CLUSTER_PEERS"},
		{map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1:7101", "TUMA_CLUSTER_PEERS": "127.0.0.1:7101,127.0.0.1:7111"}, "TUMA_JWT_SECRET"},
		{map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1:7101", "TUMA_CLUSTER_PEERS": "127.0.0.1:7101,127.0.0.1:7111",
			"TUMA_JWT_SECRET": strings.Repeat("s", 32), "TUMA_CLUSTER_PAUSE_LIMIT": "2s"}, "TUMA_CLUSTER_PAUSE_LIMIT"},
		{map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1:7101", "TUMA_CLUSTER_PEERS": "127.0.0.1:7101,127.0.0.1:7111",
			"TUMA_JWT_SECRET": strings.Repeat("s", 32), "TUMA_CLUSTER_PAUSE_LIMIT": "10ms"}, "TUMA_CLUSTER_PAUSE_LIMIT"},
		{map[string]string{"TUMA_NODE_ID": strings.Repeat("n", 64)}, "TUMA_NODE_ID"},
	}
	for _, tt := range tests {
		_, err := LoadConfig(env(tt.vars))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadConfig(%v) error = %v; want one naming %s", tt.vars, err, tt.want)
		}
	}
	// Secrets never appear in errors.
	_, err := LoadConfig(env(map[string]string{"TUMA_JWT_SECRET": "hunter2"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v reveals the secret", err)
	}
}

// A cluster node names itself after its address unless told, and its peers include it.
func TestLoadConfigCluster(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{"TUMA_CLUSTER_ADDR": "127.0.0.1:7101",
		"TUMA_CLUSTER_PEERS": " 127.0.0.1:7101, 127.0.0.1:7111 ,", "TUMA_JWT_SECRET": strings.Repeat("s", 32)}))
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != "127.0.0.1:7101" || len(c.ClusterPeers) != 2 || c.ClusterPeers[1] != "127.0.0.1:7111" {
		t.Errorf("node %q, peers %q; want the address and both peers", c.NodeID, c.ClusterPeers)
	}
	if c, err := LoadConfig(env(nil)); err != nil || c.ClusterAddr != "" || c.NodeID != "" {
		t.Errorf("a single node: %+v, %v", c.ClusterAddr, err)
	}
}

func TestPrintRedactsSecrets(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{
		"TUMA_ADMIN_TOKEN":  "super-secret-admin-token",
		"TUMA_SMTP_URL":     "smtp://mailer:mail-password@smtp.example.com:587",
		"TUMA_DATABASE_URL": "postgres://tuma:db-password@db:5432/tuma",
		"TUMA_SMPP_TELKOM":  "smpp://tuma:smpppw@10.0.0.9:2775",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, secret := range []string{"super-secret-admin-token", "mail-password", "db-password", "smpppw", c.JWTSecret} {
		if strings.Contains(out, secret) {
			t.Errorf("config output reveals %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"TUMA_SMTP_URL", "smtp.example.com", "TUMA_HTTP_ADDR", "(random per process)"} {
		if !strings.Contains(out, want) {
			t.Errorf("config output lacks %q", want)
		}
	}
}

// TestREADMEDocumentsEveryVariable keeps the README's configuration table true.
func TestREADMEDocumentsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range options() {
		if !strings.Contains(string(readme), "`"+o.name+"`") {
			t.Errorf("README.md does not document %s", o.name)
		}
	}
}

func TestEnvUnsetMeansDevelopmentOnLoopbackOnly(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8080", true}, {"127.0.0.2:0", true}, {"localhost:8080", true}, {"[::1]:8080", true},
		{"0.0.0.0:8080", false}, {":8080", false}, {"[::]:8080", false}, {"192.168.1.10:8080", false},
		{"api.example.com:8080", false},
	}
	for _, tt := range tests {
		c, err := LoadConfig(env(map[string]string{"TUMA_HTTP_ADDR": tt.addr}))
		switch {
		case tt.ok && (err != nil || c.Env != "development"):
			t.Errorf("TUMA_HTTP_ADDR=%s, TUMA_ENV unset: env %q, error %v; want development", tt.addr, c.Env, err)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), "TUMA_ENV is unset") || !strings.Contains(err.Error(), "loopback")):
			t.Errorf("TUMA_HTTP_ADDR=%s, TUMA_ENV unset: error %v; want a refusal saying TUMA_ENV must be set", tt.addr, err)
		}
	}
	// Named explicitly, development runs anywhere (the compose file does this in a container).
	c, err := LoadConfig(env(map[string]string{"TUMA_HTTP_ADDR": "0.0.0.0:8080", "TUMA_ENV": "development"}))
	if err != nil || c.Env != "development" {
		t.Errorf("explicit development on 0.0.0.0 = %q, %v", c.Env, err)
	}
}

func TestProductionRefusesUnsafeSettings(t *testing.T) {
	prod := func(extra map[string]string) map[string]string {
		m := map[string]string{"TUMA_ENV": "production", "TUMA_HTTP_ADDR": "0.0.0.0:8080", "TUMA_JWT_SECRET": strings.Repeat("s", 32),
			"TUMA_PAYMENT_PROVIDER": "paystack", "TUMA_PAYMENT_SECRET_KEY": "sk_live_provider_secret"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, ok := range []map[string]string{prod(nil), prod(map[string]string{"TUMA_ADMIN_TOKEN": strings.Repeat("a1", 16)})} {
		if _, err := LoadConfig(env(ok)); err != nil {
			t.Errorf("LoadConfig(%v) = %v; want it accepted", ok, err)
		}
	}
	tests := []struct {
		vars map[string]string
		want string
	}{
		{prod(map[string]string{"TUMA_ADMIN_TOKEN": "dev-admin-token-change-me"}), "TUMA_ADMIN_TOKEN"},
		{prod(map[string]string{"TUMA_ADMIN_TOKEN": "only-twenty-two-chars!"}), "TUMA_ADMIN_TOKEN"},
		{prod(map[string]string{"TUMA_PAYMENT_PROVIDER": "sandbox"}), "TUMA_PAYMENT_PROVIDER"},
		{prod(map[string]string{"TUMA_PAYMENT_SECRET_KEY": devPaymentSecret}), "TUMA_PAYMENT_SECRET_KEY"},
	}
	for _, tt := range tests {
		if _, err := LoadConfig(env(tt.vars)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadConfig(%v) error = %v; want one naming %s", tt.vars, err, tt.want)
		}
	}
	// Development keeps working with the Makefile's token.
	if _, err := LoadConfig(env(map[string]string{"TUMA_ADMIN_TOKEN": devAdminToken})); err != nil {
		t.Errorf("development with the Makefile's admin token: %v", err)
	}
}

func TestTrustedProxiesAndRemovedVariables(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{"TUMA_TRUSTED_PROXIES": " 10.0.0.0/8, 192.168.1.1 ,::1,"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := prefixesString(c.TrustedProxies); got != "10.0.0.0/8,192.168.1.1,::1" {
		t.Errorf("TrustedProxies = %s; want 10.0.0.0/8,192.168.1.1,::1", got)
	}
	if c, _ := LoadConfig(env(nil)); len(c.TrustedProxies) != 0 {
		t.Errorf("default TrustedProxies = %v; want none", c.TrustedProxies)
	}
	for vars, want := range map[string]map[string]string{
		"TUMA_TRUSTED_PROXIES":     {"TUMA_TRUSTED_PROXIES": "10.0.0.300"},
		"TUMA_PPROF":               {"TUMA_PPROF": "true"}, // without an admin token
		"TUMA_METRICS_ADDR":        {"TUMA_METRICS_ADDR": "9100"},
		"TUMA_SMPP_SERVER_ADDR":    {"TUMA_SMPP_SERVER_ADDR": "2775"},
		"TUMA_TRUST_FORWARDED_FOR": {"TUMA_TRUST_FORWARDED_FOR": "true"},
	} {
		if _, err := LoadConfig(env(want)); err == nil || !strings.Contains(err.Error(), vars) {
			t.Errorf("LoadConfig(%v) error = %v; want one naming %s", want, err, vars)
		}
	}
	if _, err := LoadConfig(env(map[string]string{"TUMA_TRUST_FORWARDED_FOR": "true"})); err == nil ||
		!strings.Contains(err.Error(), "TUMA_TRUSTED_PROXIES") {
		t.Errorf("the removed variable's error %v does not point at TUMA_TRUSTED_PROXIES", err)
	}
}

func TestLimitDefaultsAndZero(t *testing.T) {
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.AuthLimitPerIP != 60 || c.SignupLimitPerIP != 10 || c.CodeAttemptsPerDay != 20 || c.DeliveryChecksPerMinute != 60 ||
		c.LocalLimitKeys != 100_000 || c.MailGiveUp != 24*time.Hour || c.MetricsAddr != "" || c.SMPPServerAddr != "" || c.Pprof || c.JobWindow != 256 {
		t.Errorf("defaults = %+v", c)
	}
	zero := map[string]string{}
	for _, name := range []string{"TUMA_AUTH_LIMIT_PER_IP", "TUMA_SIGNUP_LIMIT_PER_IP", "TUMA_CODE_ATTEMPTS_PER_DAY",
		"TUMA_DELIVERY_CHECKS_PER_MINUTE", "TUMA_LOCAL_LIMIT_KEYS", "TUMA_MAIL_GIVE_UP", "TUMA_JOB_WINDOW"} {
		zero[name] = "0"
	}
	if c, err = LoadConfig(env(zero)); err != nil {
		t.Fatalf("0 must turn each limit off: %v", err)
	}
	if c.AuthLimitPerIP != 0 || c.MailGiveUp != 0 || c.JobWindow != 0 {
		t.Errorf("zeros = %+v", c)
	}
}

// TestComposeStatesItsChoices: the compose file runs development by name (it listens on
// 0.0.0.0 inside its container) and bakes in no secret.
func TestComposeStatesItsChoices(t *testing.T) {
	raw, err := os.ReadFile("../../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	vars := compose.Services["tuma"].Environment
	if vars["TUMA_ENV"] != "development" {
		t.Errorf("compose TUMA_ENV = %q; want development, stated", vars["TUMA_ENV"])
	}
	// ${NAME:-default} as compose expands it with nothing exported.
	ref := regexp.MustCompile(`\$\{(\w+)(:-([^}]*))?\}`)
	expanded := map[string]string{}
	for k, v := range vars {
		for _, m := range ref.FindAllStringSubmatch(v, -1) {
			if m[3] != "" && (strings.Contains(k, "TOKEN") || strings.Contains(k, "SECRET")) {
				t.Errorf("compose bakes in a default for %s: %q", k, v)
			}
		}
		expanded[k] = ref.ReplaceAllString(v, "$3")
	}
	c, err := LoadConfig(env(expanded))
	if err != nil {
		t.Fatalf("compose's configuration is refused: %v", err)
	}
	if c.Env != "development" || c.AdminToken != "" || !c.JWTSecretGenerated {
		t.Errorf("compose config: env %q, admin token %q, generated JWT secret %v; want development, off, generated", c.Env, c.AdminToken, c.JWTSecretGenerated)
	}
}

// TestComposeClusterProfile: the cluster profile's three nodes are one cluster (each among its
// peers, named apart, one database and Redis prefix), refuse to start without the shared
// secret, and are the servers HAProxy checks.
func TestComposeClusterProfile(t *testing.T) {
	raw, err := os.ReadFile("../../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Profiles    []string          `yaml:"profiles"`
			Environment map[string]string `yaml:"environment"`
			Restart     string            `yaml:"restart"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	haproxy, err := os.ReadFile("../../../deploy/haproxy/cluster.cfg")
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`\$\{(\w+)(:-([^}]*))?\}`)
	ids, dbs := map[string]bool{}, map[string]bool{}
	for _, name := range []string{"node1", "node2", "node3"} {
		svc, ok := compose.Services[name]
		if !ok || !slices.Contains(svc.Profiles, "cluster") || svc.Restart != "unless-stopped" {
			t.Fatalf("service %s: %+v; want it in the cluster profile, restarted (a lapsed node exits 75)", name, svc)
		}
		vars := map[string]string{}
		for k, v := range svc.Environment {
			vars[k] = ref.ReplaceAllString(v, "$3")
		}
		if _, err := LoadConfig(env(vars)); err == nil || !strings.Contains(err.Error(), "TUMA_JWT_SECRET") {
			t.Errorf("%s without TUMA_JWT_SECRET: %v; want it refused, naming the variable", name, err)
		}
		vars["TUMA_JWT_SECRET"] = strings.Repeat("k", 64)
		c, err := LoadConfig(env(vars))
		if err != nil {
			t.Fatalf("%s's configuration is refused: %v", name, err)
		}
		if len(c.ClusterPeers) != 3 || !slices.Contains(c.ClusterPeers, c.ClusterAddr) {
			t.Errorf("%s: address %s, peers %v; want one of three", name, c.ClusterAddr, c.ClusterPeers)
		}
		ids[c.NodeID], dbs[c.DatabaseURL+" "+c.RedisPrefix] = true, true
		if !strings.Contains(string(haproxy), "server "+name+" "+name+":8080 check") {
			t.Errorf("deploy/haproxy/cluster.cfg does not check %s", name)
		}
	}
	if len(ids) != 3 || len(dbs) != 1 {
		t.Errorf("node ids %v, databases %v; want three names on one database", ids, dbs)
	}
	if db := compose.Services["tuma"].Environment["TUMA_DATABASE_URL"]; dbs[db+" "] || strings.Contains(db, "tuma_cluster") {
		t.Errorf("the single node's database %q is the cluster's: it would resume the cluster's jobs", db)
	}
}

// Deliberate defects are refused by every binary but the drills' own (-tags faults).
func TestFaultsNeedAFaultsBuild(t *testing.T) {
	_, err := LoadConfig(env(map[string]string{"TUMA_FAULTS": "skip-refunds"}))
	if err == nil || !strings.Contains(err.Error(), "TUMA_FAULTS") {
		t.Fatalf("TUMA_FAULTS in a normal build: %v; want it refused, naming the variable", err)
	}
}
