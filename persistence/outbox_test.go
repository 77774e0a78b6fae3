package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// An email whose claim's lease ran out (a slow round) and that another worker claimed since is
// no longer the first worker's: it cannot renew the lease to deliver it, and its outcome
// writes change nothing; the second worker's do.
func TestEmailLeaseLostToAnotherWorker(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO email_outbox (id, to_address, subject, text_body, html_body, purpose)
		VALUES ($1, 'jane@example.com', 'Hi', 'Hi', '<p>Hi</p>', 'verification')`, persistence.NewID()); err != nil {
		t.Fatal(err)
	}
	first, err := st.ClaimEmails(ctx, time.Minute, 10)
	if err != nil || len(first) != 1 {
		t.Fatalf("first claim = %d, %v", len(first), err)
	}
	if _, err := conn.Exec(ctx, `UPDATE email_outbox SET next_attempt_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err) // the first worker's lease ran out
	}
	second, err := st.ClaimEmails(ctx, time.Minute, 10)
	if err != nil || len(second) != 1 || second[0].ID != first[0].ID {
		t.Fatalf("second claim = %+v, %v; want the same email", second, err)
	}
	if _, err := st.RenewEmail(ctx, first[0], time.Minute); !errors.Is(err, persistence.ErrEmailLeaseLost) {
		t.Fatalf("the first worker renews: %v; want ErrEmailLeaseLost", err)
	}
	if gaveUp, err := st.EmailFailed(ctx, first[0], "timeout", time.Hour, 0); err != nil || gaveUp {
		t.Fatalf("the first worker's failure: %v, %v", gaveUp, err)
	}
	if err := st.EmailSent(ctx, first[0]); err != nil {
		t.Fatal(err)
	}
	var sent bool
	var attempts int
	if err := conn.QueryRow(ctx, `SELECT sent_at IS NOT NULL, attempts FROM email_outbox`).Scan(&sent, &attempts); err != nil {
		t.Fatal(err)
	}
	if sent || attempts != 0 {
		t.Fatalf("after the first worker's writes: sent %v, attempts %d; want neither written", sent, attempts)
	}
	renewed, err := st.RenewEmail(ctx, second[0], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EmailSent(ctx, renewed); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT sent_at IS NOT NULL, attempts FROM email_outbox`).Scan(&sent, &attempts); err != nil {
		t.Fatal(err)
	}
	if !sent || attempts != 1 {
		t.Errorf("after the second worker's delivery: sent %v, attempts %d; want sent, 1", sent, attempts)
	}
}
