package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
)

// smppBind checks a system_id and password as the SMPP server will, through the node's
// database.
func (n *node) smppBind(systemID, password string) (persistence.SMPPBind, error) {
	n.t.Helper()
	ctx := context.Background()
	st, err := persistence.Open(ctx, persistence.Options{URL: n.dbURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		n.t.Fatal(err)
	}
	defer st.Close()
	pw, err := auth.NewPasswords(4)
	if err != nil {
		n.t.Fatal(err)
	}
	return st.VerifySMPPCredential(ctx, systemID, password, pw)
}

// mustBind fails the test unless the credentials bind for account a.
func (n *node) mustBind(a account, systemID, password string) {
	n.t.Helper()
	if b, err := n.smppBind(systemID, password); err != nil || b.AccountID.String() != a.ID {
		n.t.Fatalf("bind as %s with %q = %+v, %v; want account %s", systemID, password, b, err, a.ID)
	}
}

var (
	madeSystemID = regexp.MustCompile(`^acmeltd_[a-z0-9]{6}$`)
	smppPassword = regexp.MustCompile(`^[A-Za-z0-9]{8}$`)
)

// A credential is made with nothing chosen ({}): its system_id from the company name, its password
// shown once and then never again, in a get or a list; it binds with that password until a
// rotation gives another, which alone binds then; a patch changes what it names; a deleted
// credential binds no more and is gone.
func TestSMPPCredentialLifecycle(t *testing.T) {
	n := startNode(t, noRateLimit)
	a := n.register("smpp@example.com")
	access, _ := n.login(a)

	n.do("POST", "/smpp/credentials", nil, key(a)...).problem(t, 400, "malformed_json") // {} at least
	r := n.do("POST", "/smpp/credentials", map[string]any{}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create with nothing chosen = %d %s", r.Status, r.Body)
	}
	made := r.json(t)
	id, systemID, password := made["id"].(string), made["system_id"].(string), made["password"].(string)
	if !madeSystemID.MatchString(systemID) || !smppPassword.MatchString(password) || made["max_binds"] != 4.0 ||
		made["enabled"] != true || made["last_bound_at"] != nil || string(mustJSON(t, made["allowed_ips"])) != "[]" {
		t.Errorf("made = %s", r.Body)
	}
	n.mustBind(a, systemID, password)
	n.mustBind(a, strings.ToUpper(systemID), password)
	if n.sqlInt(`SELECT count(*) FROM smpp_credentials WHERE password_hash LIKE '%'||$1||'%'`, password) != 0 {
		t.Error("the password is stored in clear")
	}

	// The password is never shown again.
	for _, path := range []string{"/smpp/credentials", "/smpp/credentials/" + id} {
		r := n.do("GET", path, nil, bearer(access)...)
		if r.Status != 200 || strings.Contains(string(r.Body), password) || strings.Contains(string(r.Body), `"password"`) {
			t.Errorf("GET %s = %d %s; want the credential without its password", path, r.Status, r.Body)
		}
	}

	// Chosen fields, by a browser's token.
	r = n.do("POST", "/smpp/credentials", map[string]any{"system_id": "Acme-Bulk_1", "allowed_ips": []string{"192.0.2.7", "2001:db8::/32", "192.0.2.7/32"},
		"max_binds": 10}, bearer(access)...)
	if r.Status != 201 {
		t.Fatalf("create with fields = %d %s", r.Status, r.Body)
	}
	chosen := r.json(t)
	if chosen["system_id"] != "Acme-Bulk_1" || chosen["max_binds"] != 10.0 || string(mustJSON(t, chosen["allowed_ips"])) != `["192.0.2.7","2001:db8::/32"]` {
		t.Errorf("chosen = %s", r.Body)
	}
	if list := n.do("GET", "/smpp/credentials", nil, key(a)...).json2(t); len(list) != 2 || list[0].(map[string]any)["id"] != id {
		t.Errorf("list = %v; want both, oldest first", list)
	}

	// A rotation: the new password binds, the old one no more.
	r = n.do("POST", "/smpp/credentials/"+id+"/rotate-password", nil, key(a)...)
	if r.Status != 200 {
		t.Fatalf("rotate = %d %s", r.Status, r.Body)
	}
	rotated := r.json(t)
	next, _ := rotated["password"].(string)
	if !smppPassword.MatchString(next) || next == password || rotated["system_id"] != systemID || rotated["id"] != id {
		t.Errorf("rotated = %s; want the same credential with a new password", r.Body)
	}
	if _, err := n.smppBind(systemID, password); !errors.Is(err, persistence.ErrSMPPBindRefused) {
		t.Errorf("the password before the rotation binds: %v", err)
	}
	n.mustBind(a, systemID, next)

	// A patch changes only what it names.
	r = n.do("PATCH", "/smpp/credentials/"+id, map[string]any{"allowed_ips": []string{"203.0.113.0/24"}, "max_binds": 2}, key(a)...)
	if got := r.json(t); r.Status != 200 || got["max_binds"] != 2.0 || string(mustJSON(t, got["allowed_ips"])) != `["203.0.113.0/24"]` || got["enabled"] != true {
		t.Errorf("patch = %d %s", r.Status, r.Body)
	}
	if b, err := n.smppBind(systemID, next); err != nil || b.MaxBinds != 2 || b.AllowedIPs.Strings()[0] != "203.0.113.0/24" {
		t.Errorf("bind after the patch = %+v, %v", b, err)
	}
	r = n.do("PATCH", "/smpp/credentials/"+id, map[string]any{"enabled": false, "allowed_ips": []string{}}, key(a)...)
	if got := r.json(t); r.Status != 200 || got["enabled"] != false || got["max_binds"] != 2.0 || string(mustJSON(t, got["allowed_ips"])) != "[]" {
		t.Errorf("disable = %d %s", r.Status, r.Body)
	}
	if _, err := n.smppBind(systemID, next); !errors.Is(err, persistence.ErrSMPPCredentialDisabled) {
		t.Errorf("bind of a disabled credential: %v", err)
	}

	if r := n.do("DELETE", "/smpp/credentials/"+id, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	n.do("GET", "/smpp/credentials/"+id, nil, key(a)...).problem(t, 404, "not_found")
	n.do("DELETE", "/smpp/credentials/"+id, nil, key(a)...).problem(t, 404, "not_found")
	if _, err := n.smppBind(systemID, next); !errors.Is(err, persistence.ErrSMPPBindRefused) {
		t.Errorf("bind of a deleted credential: %v", err)
	}
	n.do("GET", "/smpp/credentials", nil).problem(t, 401, "unauthenticated")
}

// Another tenant's credential is a 404 to every operation, by key or token, and none of them
// changes it: its password still binds, its fields are as they were.
func TestSMPPCredentialsOfAnotherTenant(t *testing.T) {
	n := startNode(t, noRateLimit)
	a := n.register("smpp-owner@example.com")
	b := n.register("smpp-other@example.com")
	access, _ := n.login(b)
	r := n.do("POST", "/smpp/credentials", map[string]any{"system_id": "owner1"}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	owned := r.json(t)
	id, password := owned["id"].(string), owned["password"].(string)

	for _, creds := range [][]string{key(b), bearer(access)} {
		n.do("GET", "/smpp/credentials/"+id, nil, creds...).problem(t, 404, "not_found")
		n.do("PATCH", "/smpp/credentials/"+id, map[string]any{"enabled": false}, creds...).problem(t, 404, "not_found")
		n.do("PATCH", "/smpp/credentials/"+id, map[string]any{"max_binds": 0}, creds...).problem(t, 404, "not_found")
		n.do("POST", "/smpp/credentials/"+id+"/rotate-password", nil, creds...).problem(t, 404, "not_found")
		n.do("DELETE", "/smpp/credentials/"+id, nil, creds...).problem(t, 404, "not_found")
		if r := n.do("GET", "/smpp/credentials", nil, creds...); r.Status != 200 || string(r.Body) != "[]" {
			t.Errorf("the other tenant's list = %d %s; want []", r.Status, r.Body)
		}
	}
	for _, path := range []string{"/smpp/credentials/not-an-id", "/smpp/credentials/0190a6c4-0000-7000-8000-000000000000"} {
		n.do("GET", path, nil, key(a)...).problem(t, 404, "not_found")
	}
	n.mustBind(a, "owner1", password)
	if r := n.do("GET", "/smpp/credentials/"+id, nil, key(a)...); r.Status != 200 || r.json(t)["enabled"] != true {
		t.Errorf("the owner's credential after the other's attempts = %d %s", r.Status, r.Body)
	}
}

// Bad input is a 422 naming each field and stores nothing; a system_id any account has, in
// any case, is a 409; an account's credentials stop at TUMA_SMPP_CREDENTIALS_PER_ACCOUNT.
func TestSMPPCredentialRefusals(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_RATE_LIMIT_RPS": "0", "TUMA_SMPP_CREDENTIALS_PER_ACCOUNT": "2"})
	a := n.register("smpp-refusals@example.com")
	b := n.register("smpp-rival@example.com")
	stored := func() int64 { return n.sqlInt(`SELECT count(*) FROM smpp_credentials`) }

	many := make([]string, persistence.MaxAllowListEntries+1)
	for i := range many {
		many[i] = fmt.Sprintf("192.0.2.%d", i)
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"system_id": ""}, "system_id"},
		{map[string]any{"system_id": "sixteen-chars-id"}, "system_id"},
		{map[string]any{"system_id": "acme bank"}, "system_id"},
		{map[string]any{"system_id": "acmé"}, "system_id"},
		{map[string]any{"system_id": 7}, "system_id"},
		{map[string]any{"allowed_ips": []string{"192.0.2.7", "example.com"}}, "allowed_ips[1]"},
		{map[string]any{"allowed_ips": []string{"10.0.0.5/8"}}, "allowed_ips[0]"},
		{map[string]any{"allowed_ips": []string{""}}, "allowed_ips[0]"},
		{map[string]any{"allowed_ips": many}, "allowed_ips"},
		{map[string]any{"allowed_ips": "192.0.2.7"}, "allowed_ips"},
		{map[string]any{"max_binds": 0}, "max_binds"},
		{map[string]any{"max_binds": 101}, "max_binds"},
		{map[string]any{"max_binds": 2.5}, "max_binds"},
		{map[string]any{"password": "mypass12"}, "password"},
		{map[string]any{"enabled": false}, "enabled"},
	} {
		p := n.do("POST", "/smpp/credentials", c.body, key(a)...).problem(t, 422, "validation_failed")
		namesField(t, p, c.field)
	}
	n.do("POST", "/smpp/credentials", "{", key(a)...).problem(t, 400, "malformed_json")
	if got := stored(); got != 0 {
		t.Fatalf("%d credentials stored after the refusals; want none", got)
	}

	// Exactly 15 characters, and the bounds of max_binds, are taken.
	r := n.do("POST", "/smpp/credentials", map[string]any{"system_id": "Fifteen-Chars_1", "max_binds": 100}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("15-character system_id = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	for _, body := range []map[string]any{{"system_id": "Fifteen-Chars_1"}, {"system_id": "FIFTEEN-chars_1"}} {
		n.do("POST", "/smpp/credentials", body, key(b)...).problem(t, 409, "smpp_system_id_taken")
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"system_id": "renamed"}, "system_id"},
		{map[string]any{"password": "mypass12"}, "password"},
		{map[string]any{"max_binds": 0}, "max_binds"},
		{map[string]any{"allowed_ips": []string{"fe80::1%eth0"}}, "allowed_ips[0]"},
	} {
		p := n.do("PATCH", "/smpp/credentials/"+id, c.body, key(a)...).problem(t, 422, "validation_failed")
		namesField(t, p, c.field)
	}
	if got := n.do("GET", "/smpp/credentials/"+id, nil, key(a)...).json(t); got["system_id"] != "Fifteen-Chars_1" || got["max_binds"] != 100.0 {
		t.Errorf("after refused patches = %v", got)
	}

	// The limit: a second is made, a third refused; after a delete there is room again.
	if r := n.do("POST", "/smpp/credentials", map[string]any{"max_binds": 1}, key(a)...); r.Status != 201 {
		t.Fatalf("second = %d %s", r.Status, r.Body)
	}
	n.do("POST", "/smpp/credentials", map[string]any{}, key(a)...).problem(t, 422, "limit_reached")
	if got := stored(); got != 2 {
		t.Errorf("%d credentials stored; want 2", got)
	}
	if r := n.do("DELETE", "/smpp/credentials/"+id, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	// Its system_id is free again, for any account.
	if r := n.do("POST", "/smpp/credentials", map[string]any{"system_id": "fifteen-chars_1"}, key(b)...); r.Status != 201 {
		t.Errorf("a deleted credential's system_id = %d %s; want it free", r.Status, r.Body)
	}
	list := n.do("GET", "/smpp/credentials", nil, key(a)...).json2(t)
	if len(list) != 1 || !slices.ContainsFunc(list, func(c any) bool { return c.(map[string]any)["max_binds"] == 1.0 }) {
		t.Errorf("the account's list = %v; want the second credential alone", list)
	}
}
