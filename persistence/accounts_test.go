package persistence_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func newAccount(email string) persistence.NewAccount {
	h := sha256.Sum256([]byte("key-for-" + email))
	return persistence.NewAccount{
		Email: email, PasswordHash: "hash", FullName: "Jane", CompanyName: "Acme",
		APIKeyHash: h[:], APIKeyPrefix: "sk_live_abcd",
	}
}

func TestCreateAccount(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("jane@example.com"))
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if a.ID.Version() != 7 {
		t.Errorf("id version = %d; want UUIDv7", a.ID.Version())
	}
	got, err := st.AccountByEmail(ctx, "jane@example.com")
	if err != nil || got.ID != a.ID || !got.Active() || got.BalanceCents != 0 {
		t.Fatalf("AccountByEmail = %+v, %v; want the new active account with a zero wallet", got, err)
	}
	if _, err := st.CreateAccount(ctx, newAccount("jane@example.com")); !errors.Is(err, persistence.ErrEmailTaken) {
		t.Errorf("second CreateAccount error = %v; want ErrEmailTaken", err)
	}
	if _, err := st.AccountByID(ctx, uuid.New()); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("AccountByID(unknown) error = %v; want ErrNotFound", err)
	}
}

func TestConcurrentRegistrationOfOneEmail(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		created, took int
	)
	for range 50 {
		wg.Go(func() {
			_, err := st.CreateAccount(context.Background(), newAccount("race@example.com"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, persistence.ErrEmailTaken):
				took++
			default:
				t.Errorf("CreateAccount: %v", err)
			}
		})
	}
	wg.Wait()
	if created != 1 || took != 49 {
		t.Fatalf("created %d, email taken %d; want 1 and 49", created, took)
	}
}

func TestRotateAPIKey(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	na := newAccount("keys@example.com")
	a, err := st.CreateAccount(ctx, na)
	if err != nil {
		t.Fatal(err)
	}
	newHash := sha256.Sum256([]byte("second key"))
	old, err := st.RotateAPIKey(ctx, a.ID, newHash[:], "sk_live_efgh")
	if err != nil {
		t.Fatalf("RotateAPIKey: %v", err)
	}
	if string(old) != string(na.APIKeyHash) {
		t.Errorf("RotateAPIKey returned old hash %x; want %x", old, na.APIKeyHash)
	}
	if _, _, err := st.AccountByKeyHash(ctx, na.APIKeyHash); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("old key lookup error = %v; want ErrNotFound", err)
	}
	id, acc, err := st.AccountByKeyHash(ctx, newHash[:])
	if err != nil || id != a.ID || acc.Status != persistence.StatusActive {
		t.Errorf("new key lookup = %v, %+v, %v; want %v active", id, acc, err, a.ID)
	}
}

func TestRefreshTokenRotationAndReuse(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("tokens@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := func(s string) []byte { x := sha256.Sum256([]byte(s)); return x[:] }
	if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h("t1"), now.Add(time.Hour), a.TokenVersion); err != nil {
		t.Fatal(err)
	}
	if id, err := st.RotateRefreshToken(ctx, h("t1"), h("t2"), now, now.Add(time.Hour)); err != nil || id != a.ID {
		t.Fatalf("first rotation = %v, %v; want %v, nil", id, err, a.ID)
	}
	// t1 again: it leaked. The family (t2 included) must die.
	if _, err := st.RotateRefreshToken(ctx, h("t1"), h("t3"), now, now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenReused) {
		t.Fatalf("reuse error = %v; want ErrTokenReused", err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("t2"), h("t4"), now, now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Fatalf("rotation of a revoked family member error = %v; want ErrTokenInvalid", err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("nope"), h("t5"), now, now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Errorf("unknown token error = %v; want ErrTokenInvalid", err)
	}
	// Expiry.
	if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h("e1"), now.Add(time.Minute), a.TokenVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("e1"), h("e2"), now.Add(2*time.Minute), now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Errorf("expired token error = %v; want ErrTokenInvalid", err)
	}
}

func TestConcurrentRefreshWithOneTokenRevokesFamily(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("race-refresh@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := func(s string) []byte { x := sha256.Sum256([]byte(s)); return x[:] }
	if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h("r"), now.Add(time.Hour), a.TokenVersion); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, errs[i] = st.RotateRefreshToken(ctx, h("r"), h("r-next-"+string(rune('a'+i))), now, now.Add(time.Hour))
		})
	}
	wg.Wait()
	ok, reused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, persistence.ErrTokenReused):
			reused++
		}
	}
	if ok != 1 || reused != 1 {
		t.Fatalf("errors %v; want one success and one reuse", errs)
	}
	for _, suffix := range []string{"a", "b"} {
		if _, err := st.RotateRefreshToken(ctx, h("r-next-"+suffix), h("x"+suffix), now, now.Add(time.Hour)); err == nil {
			t.Errorf("token issued to the winner still works after the reuse; want the family revoked")
		}
	}
}

func TestSetPasswordAndSuspensionEndSessions(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("sessions@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := func(s string) []byte { x := sha256.Sum256([]byte(s)); return x[:] }
	for _, tok := range []string{"s1", "s2"} {
		if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h(tok), now.Add(time.Hour), a.TokenVersion); err != nil {
			t.Fatal(err)
		}
	}
	acc, err := st.SetPassword(ctx, a.ID, "new-hash")
	if err != nil {
		t.Fatal(err)
	}
	// The token version is bumped with the password, so access tokens issued before stop.
	if acc.TokenVersion != 1 || acc.Status != persistence.StatusActive {
		t.Errorf("SetPassword = %+v; want active, token version 1", acc)
	}
	if got, err := st.AccountAccess(ctx, a.ID); err != nil || got != acc {
		t.Errorf("AccountAccess = %+v, %v; want %+v", got, err, acc)
	}
	if _, err := st.RotateRefreshToken(ctx, h("s1"), h("s1b"), now, now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Errorf("refresh after password change error = %v; want ErrTokenInvalid", err)
	}
	if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h("s3"), now.Add(time.Hour), acc.TokenVersion); err != nil {
		t.Fatal(err)
	}
	got, err := st.SetStatus(ctx, a.ID, persistence.StatusSuspended)
	if err != nil || got.Active() {
		t.Fatalf("SetStatus = %+v, %v; want suspended", got, err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("s3"), h("s3b"), now, now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Errorf("refresh after suspension error = %v; want ErrTokenInvalid", err)
	}
	if _, err := st.SetStatus(ctx, uuid.New(), persistence.StatusSuspended); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("SetStatus(unknown) error = %v; want ErrNotFound", err)
	}
}

func TestIdempotencyKeys(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("idem@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	k := persistence.IdempotencyKey{AccountID: a.ID, Key: "k1"}
	held, resp, err := st.ClaimIdempotencyKey(ctx, k, []byte("h1"), time.Minute)
	if resp != nil || err != nil || held.Claim == uuid.Nil {
		t.Fatalf("first claim = %+v, %v, %v; want a claim", held, resp, err)
	}
	if _, _, err := st.ClaimIdempotencyKey(ctx, k, []byte("h1"), time.Minute); !errors.Is(err, persistence.ErrIdempotencyBusy) {
		t.Errorf("claim while in flight error = %v; want ErrIdempotencyBusy", err)
	}
	if _, _, err := st.ClaimIdempotencyKey(ctx, k, []byte("h2"), time.Minute); !errors.Is(err, persistence.ErrIdempotencyUsed) {
		t.Errorf("claim with another body error = %v; want ErrIdempotencyUsed", err)
	}
	if err := st.CompleteIdempotencyKey(ctx, k, persistence.StoredResponse{Status: 202}); !errors.Is(err, persistence.ErrIdempotencyLost) {
		t.Errorf("complete without the claim error = %v; want ErrIdempotencyLost", err)
	}
	if err := st.CompleteIdempotencyKey(ctx, held, persistence.StoredResponse{Status: 202, Body: []byte(`{"ok":1}`)}); err != nil {
		t.Fatal(err)
	}
	_, resp, err = st.ClaimIdempotencyKey(ctx, k, []byte("h1"), time.Minute)
	if err != nil || resp == nil || resp.Status != 202 || string(resp.Body) != `{"ok":1}` {
		t.Fatalf("replay = %+v, %v; want the stored 202", resp, err)
	}
	// A released key (the request wrote nothing) can be claimed again; only its holder releases.
	k2 := persistence.IdempotencyKey{AccountID: a.ID, Key: "k2"}
	held2, _, err := st.ClaimIdempotencyKey(ctx, k2, []byte("h"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseIdempotencyKey(ctx, k2); err != nil { // no claim: releases nothing
		t.Fatal(err)
	}
	if _, _, err := st.ClaimIdempotencyKey(ctx, k2, []byte("h"), time.Minute); !errors.Is(err, persistence.ErrIdempotencyBusy) {
		t.Errorf("claim after a stranger's release error = %v; want ErrIdempotencyBusy", err)
	}
	if err := st.ReleaseIdempotencyKey(ctx, held2); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := st.ClaimIdempotencyKey(ctx, k2, []byte("other"), time.Minute); resp != nil || err != nil {
		t.Errorf("claim after release = %v, %v; want nil, nil", resp, err)
	}
	// An in-flight claim whose lease ran out (its request never finished) can be taken over by
	// the same request, and the first claim is then fenced out: it can no longer complete.
	k3 := persistence.IdempotencyKey{AccountID: a.ID, Key: "k3"}
	first, _, err := st.ClaimIdempotencyKey(ctx, k3, []byte("h"), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the 1 ms lease lapse on the database clock
	second, resp, err := st.ClaimIdempotencyKey(ctx, k3, []byte("h"), time.Minute)
	if resp != nil || err != nil || second.Claim == first.Claim {
		t.Fatalf("claim after lease expiry = %v, %v; want a new claim", resp, err)
	}
	if err := st.CompleteIdempotencyKey(ctx, first, persistence.StoredResponse{Status: 202}); !errors.Is(err, persistence.ErrIdempotencyLost) {
		t.Errorf("the lapsed claim completing error = %v; want ErrIdempotencyLost", err)
	}
	if err := st.CompleteIdempotencyKey(ctx, second, persistence.StoredResponse{Status: 202}); err != nil {
		t.Errorf("the new claim completing: %v", err)
	}
}

func TestOpenCreatesMissingDatabase(t *testing.T) {
	pgtest.NewDatabase(t) // skips or fails when PostgreSQL is unreachable
	ctx := context.Background()
	name := "tuma_open_test_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	u, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	st, err := persistence.Open(ctx, persistence.Options{URL: u.String()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open on a missing database: %v", err)
	}
	st.Close()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || !exists {
		t.Fatalf("database %s exists = %v (%v); want true", name, exists, err)
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateConcurrentlyAppliesEachMigrationOnce(t *testing.T) {
	pgtest.NewDatabase(t)
	ctx := context.Background()
	name := "tuma_migrate_test_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	u, _ := url.Parse(pgtest.AdminURL())
	u.Path = "/" + name
	t.Cleanup(func() {
		if admin, err := pgx.Connect(ctx, pgtest.AdminURL()); err == nil {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			admin.Close(ctx)
		}
	})
	var stores []*persistence.Store
	for range 3 {
		st, err := persistence.Open(ctx, persistence.Options{URL: u.String(), MaxConns: 2}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	var wg sync.WaitGroup
	tos := make([]int32, len(stores))
	errs := make([]error, len(stores))
	for i, st := range stores {
		wg.Go(func() { _, tos[i], errs[i] = st.Migrate(ctx) })
	}
	wg.Wait()
	for i := range stores {
		if errs[i] != nil || tos[i] != tos[0] || tos[0] < 1 {
			t.Fatalf("Migrate results %v, %v; want every node at the same version without error", tos, errs)
		}
	}
	from, to, err := stores[0].Migrate(ctx)
	if err != nil || from != to {
		t.Fatalf("second Migrate = %d→%d, %v; want a no-op", from, to, err)
	}
}

// A sign-in whose password check overlapped a password change issues no refresh token that
// outlives the change: issued against the old version, it is refused at once; inserted just
// after the change revoked the account's tokens (the race), it is refused when used.
func TestRefreshTokensDoNotOutliveAPasswordChange(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("straddle@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := func(s string) []byte { x := sha256.Sum256([]byte(s)); return x[:] }
	if _, err := st.SetPassword(ctx, a.ID, "$2a$04$changedchangedchangedchangedchangedchangedchangedchang"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h("late"), now.Add(time.Hour), a.TokenVersion); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Errorf("a token for the version before the change: %v; want ErrTokenInvalid", err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The race: a sign-in's insert that read the old version, committed after the change's
	// revocation.
	if _, err := conn.Exec(ctx, `INSERT INTO refresh_tokens (id, account_id, family_id, token_hash, expires_at, token_version)
		VALUES ($1, $2, $3, $4, $5, $6)`, uuid.New(), a.ID, uuid.New(), h("raced"), now.Add(time.Hour), a.TokenVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("raced"), h("raced-next"), now, now.Add(time.Hour)); !errors.Is(err, persistence.ErrTokenInvalid) {
		t.Errorf("refresh with a token of the version before the change: %v; want ErrTokenInvalid", err)
	}
	// A token of the new version works, and its successor too.
	if _, err := st.CreateRefreshToken(ctx, a.ID, uuid.Nil, h("new"), now.Add(time.Hour), a.TokenVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("new"), h("new-next"), now, now.Add(time.Hour)); err != nil {
		t.Errorf("refresh with a token of the current version: %v", err)
	}
	if _, err := st.RotateRefreshToken(ctx, h("new-next"), h("new-next-2"), now, now.Add(time.Hour)); err != nil {
		t.Errorf("refresh with its successor: %v", err)
	}
}
