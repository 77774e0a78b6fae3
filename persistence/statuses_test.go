package persistence_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// checkValues reads the values a column's CHECK (col IN (…)) constraint allows.
func checkValues(t *testing.T, conn *pgx.Conn, table, column string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
		WHERE c.conrelid = $1::regclass AND c.contype = 'c'`, table)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// CHECK ((status = ANY (ARRAY['queued'::text, 'sent'::text])))
	constraint := regexp.MustCompile(`^CHECK \(\(` + column + ` = ANY \(ARRAY\[(.*)\]\)\)\)$`)
	literal := regexp.MustCompile(`'([^']*)'::text`)
	for _, d := range defs {
		if m := constraint.FindStringSubmatch(d); m != nil {
			var out []string
			for _, l := range literal.FindAllStringSubmatch(m[1], -1) {
				out = append(out, l[1])
			}
			slices.Sort(out)
			return out
		}
	}
	t.Fatalf("%s.%s has no CHECK (%s IN (…)) constraint; its constraints: %q", table, column, column, defs)
	return nil
}

func sorted[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	slices.Sort(out)
	return out
}

// Each typed status lists exactly the values its column's CHECK constraint allows.
func TestStatusesMatchTheSchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, c := range []struct {
		table, column string
		values        []string
	}{
		{"messages", "status", sorted(persistence.MessageStatuses())},
		{"jobs", "status", sorted(persistence.JobStatuses())},
		{"accounts", "status", sorted(persistence.AccountStatuses())},
		{"wallet_transactions", "type", sorted(persistence.TransactionTypes())},
		{"payments", "status", sorted(persistence.PaymentStatuses())},
		{"payments", "purpose", sorted(persistence.PaymentPurposes())},
		{"idempotency_keys", "state", sorted(persistence.IdempotencyStates())},
		{"sender_ids", "status", sorted(persistence.SenderStatuses())},
		{"sender_ids", "network", sorted(persistence.SenderNetworks())},
		{"sender_documents", "kind", sorted(persistence.DocumentKinds())},
		{"campaigns", "status", sorted(persistence.CampaignStatuses())},
		{"jobs", "source", sorted(persistence.Sources())},
		{"webhook_deliveries", "status", sorted(persistence.DeliveryStatuses())},
		{"smpp_receipts", "kind", sorted(persistence.SMPPKinds())},
	} {
		if got := checkValues(t, conn, c.table, c.column); !slices.Equal(got, c.values) {
			t.Errorf("%s.%s: the schema allows %v, the Go constants %v", c.table, c.column, got, c.values)
		}
	}
}
