package persistence_test

import (
	"context"
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/transport/auth"
)

// newSMPP stores a credential of the account with a fresh password and returns both.
func newSMPP(t *testing.T, st *persistence.Store, pw *auth.Passwords, n persistence.NewSMPPCredential) (persistence.SMPPCredential, string) {
	t.Helper()
	password, err := auth.NewSMPPPassword()
	if err != nil {
		t.Fatal(err)
	}
	if n.PasswordHash, err = pw.Hash(password); err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateSMPPCredential(context.Background(), n)
	if err != nil {
		t.Fatalf("CreateSMPPCredential(%+v): %v", n, err)
	}
	return c, password
}

// A bind checks its password against the stored hash; an unknown system_id and a wrong
// password are refused alike, and only a right password learns that its credential is
// disabled or its account suspended. A new password makes the old one fail.
func TestVerifySMPPCredential(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	pw, err := auth.NewPasswords(4)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAccount(ctx, newAccount("smpp@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	ips, err := persistence.ParseAllowList([]string{"192.0.2.0/24", "2001:db8::1"})
	if err != nil {
		t.Fatal(err)
	}
	c, password := newSMPP(t, st, pw, persistence.NewSMPPCredential{AccountID: a.ID, SystemID: "AcmeBank", AllowedIPs: ips, MaxBinds: 7})

	for _, systemID := range []string{"AcmeBank", "acmebank", "ACMEBANK"} {
		b, err := st.VerifySMPPCredential(ctx, systemID, password, pw)
		if err != nil || b.AccountID != a.ID || b.CredentialID != c.ID || b.MaxBinds != 7 || !slices.Equal(b.AllowedIPs, ips) {
			t.Fatalf("VerifySMPPCredential(%s, right password) = %+v, %v; want the account's bind", systemID, b, err)
		}
		if !b.AllowedIPs.Allows(netip.MustParseAddr("192.0.2.9")) || b.AllowedIPs.Allows(netip.MustParseAddr("198.51.100.1")) {
			t.Errorf("the bind's allow-list %v is not the credential's", b.AllowedIPs)
		}
	}
	for _, c := range []struct{ systemID, password string }{
		{"AcmeBank", password[:7]}, {"AcmeBank", ""}, {"AcmeBank", password + "x"}, {"nosuchid", password}, {"", ""},
	} {
		if b, err := st.VerifySMPPCredential(ctx, c.systemID, c.password, pw); !errors.Is(err, persistence.ErrSMPPBindRefused) || b.AccountID != uuid.Nil {
			t.Errorf("VerifySMPPCredential(%q, %q) = %+v, %v; want ErrSMPPBindRefused", c.systemID, c.password, b, err)
		}
	}

	hash, err := pw.Hash("n3wPassw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSMPPPassword(ctx, a.ID, c.ID, hash); err != nil {
		t.Fatal(err)
	}
	if _, err := st.VerifySMPPCredential(ctx, "AcmeBank", password, pw); !errors.Is(err, persistence.ErrSMPPBindRefused) {
		t.Errorf("the password before a rotation: %v; want ErrSMPPBindRefused", err)
	}
	if _, err := st.VerifySMPPCredential(ctx, "AcmeBank", "n3wPassw", pw); err != nil {
		t.Errorf("the password after a rotation: %v", err)
	}

	off := false
	if _, err := st.UpdateSMPPCredential(ctx, a.ID, c.ID, persistence.SMPPCredentialPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.VerifySMPPCredential(ctx, "AcmeBank", "n3wPassw", pw); !errors.Is(err, persistence.ErrSMPPCredentialDisabled) {
		t.Errorf("a disabled credential: %v; want ErrSMPPCredentialDisabled", err)
	}
	if _, err := st.VerifySMPPCredential(ctx, "AcmeBank", "wrongpwd", pw); !errors.Is(err, persistence.ErrSMPPBindRefused) {
		t.Errorf("a disabled credential, wrong password: %v; want ErrSMPPBindRefused (disabled is told only to its password)", err)
	}
	on := true
	if _, err := st.UpdateSMPPCredential(ctx, a.ID, c.ID, persistence.SMPPCredentialPatch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetStatus(ctx, a.ID, persistence.StatusSuspended); err != nil {
		t.Fatal(err)
	}
	if _, err := st.VerifySMPPCredential(ctx, "AcmeBank", "n3wPassw", pw); !errors.Is(err, persistence.ErrSMPPAccountSuspended) {
		t.Errorf("a suspended account: %v; want ErrSMPPAccountSuspended", err)
	}
}

// A system_id is one credential's across accounts, whatever its case; one is made from the
// company name when none is chosen; an account's credentials stop at its limit, even asked
// for at once; another account's credential is not found by any operation.
func TestSMPPCredentials(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	pw, err := auth.NewPasswords(4)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAccount(ctx, newAccount("smpp-a@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.CreateAccount(ctx, newAccount("smpp-b@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newSMPP(t, st, pw, persistence.NewSMPPCredential{AccountID: a.ID, SystemID: "shared-ID"})
	if c.MaxBinds != persistence.DefaultSMPPMaxBinds || !c.Enabled || c.LastBoundAt != nil || len(c.AllowedIPs) != 0 || c.AllowedIPs == nil {
		t.Errorf("new credential = %+v; want 4 binds, enabled, never bound, any address", c)
	}
	for _, acct := range []uuid.UUID{a.ID, b.ID} {
		_, err := st.CreateSMPPCredential(ctx, persistence.NewSMPPCredential{AccountID: acct, SystemID: "SHARED-id", PasswordHash: "x"})
		if !errors.Is(err, persistence.ErrSMPPSystemIDTaken) {
			t.Errorf("system_id taken in another case: %v; want ErrSMPPSystemIDTaken", err)
		}
	}
	made, _ := newSMPP(t, st, pw, persistence.NewSMPPCredential{AccountID: a.ID})
	if !regexp.MustCompile(`^acme_[a-z0-9]{6}$`).MatchString(made.SystemID) {
		t.Errorf("made system_id %q; want acme_ and 6 random characters", made.SystemID)
	}

	// Another account's credential is not found, changed, rotated nor deleted.
	if _, err := st.SMPPCredentialByID(ctx, b.ID, c.ID); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("another account's get: %v", err)
	}
	binds := 9
	if _, err := st.UpdateSMPPCredential(ctx, b.ID, c.ID, persistence.SMPPCredentialPatch{MaxBinds: &binds}); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("another account's update: %v", err)
	}
	if _, err := st.SetSMPPPassword(ctx, b.ID, c.ID, "x"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("another account's rotation: %v", err)
	}
	if err := st.DeleteSMPPCredential(ctx, b.ID, c.ID); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("another account's delete: %v", err)
	}
	if list, err := st.SMPPCredentials(ctx, b.ID); err != nil || len(list) != 0 {
		t.Errorf("the other account's list = %v, %v; want none", list, err)
	}

	// A patch changes what it names; an empty allow-list is any address again.
	ips, _ := persistence.ParseAllowList([]string{"203.0.113.0/24"})
	u, err := st.UpdateSMPPCredential(ctx, a.ID, c.ID, persistence.SMPPCredentialPatch{AllowedIPs: &ips, MaxBinds: &binds})
	if err != nil || u.MaxBinds != 9 || !slices.Equal(u.AllowedIPs, ips) || !u.Enabled || u.SystemID != "shared-ID" {
		t.Fatalf("update = %+v, %v", u, err)
	}
	none := persistence.AllowList{}
	if u, err = st.UpdateSMPPCredential(ctx, a.ID, c.ID, persistence.SMPPCredentialPatch{AllowedIPs: &none}); err != nil || len(u.AllowedIPs) != 0 || u.MaxBinds != 9 {
		t.Fatalf("update to any address = %+v, %v", u, err)
	}

	// A deleted credential's system_id is free again.
	if err := st.DeleteSMPPCredential(ctx, a.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	newSMPP(t, st, pw, persistence.NewSMPPCredential{AccountID: b.ID, SystemID: "shared-id"})

	// Ten asked for at once, with room for three more: three are made.
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := st.CreateSMPPCredential(ctx, persistence.NewSMPPCredential{AccountID: a.ID, PasswordHash: "x", Limit: 4})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	limited := 0
	for err := range errs {
		switch {
		case errors.Is(err, persistence.ErrSMPPCredentialLimit):
			limited++
		case err != nil:
			t.Errorf("create: %v", err)
		}
	}
	if list, err := st.SMPPCredentials(ctx, a.ID); err != nil || len(list) != 4 || limited != 7 {
		t.Errorf("%d credentials (%v), %d refused at the limit; want 4 and 7", len(list), err, limited)
	}
}
