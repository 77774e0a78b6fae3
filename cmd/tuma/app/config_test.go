package app

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.PublicURL != "http://127.0.0.1:8080" || c.DashboardURL != "http://127.0.0.1:8080/docs" ||
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

func TestPrintRedactsSecrets(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{
		"TUMA_ADMIN_TOKEN":  "super-secret-admin-token",
		"TUMA_SMTP_URL":     "smtp://mailer:mail-password@smtp.example.com:587",
		"TUMA_DATABASE_URL": "postgres://tuma:db-password@db:5432/tuma",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, secret := range []string{"super-secret-admin-token", "mail-password", "db-password", c.JWTSecret} {
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
