package inbound_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/transport/api/inbound"
)

// tenants stands in for the engine: it fails the first fail suppression changes, as a busy
// tenant does, and counts those it took.
type tenants struct {
	fail    int
	changes []uint32
	started []uuid.UUID
}

var errBusy = errors.New("tenant busy")

func (f *tenants) SuppressionChanged(_ context.Context, _ uuid.UUID, nsn uint32, _ bool) error {
	if f.fail > 0 {
		f.fail--
		return errBusy
	}
	f.changes = append(f.changes, nsn)
	return nil
}

func (f *tenants) StartJob(_, jobID uuid.UUID) { f.started = append(f.started, jobID) }

// A STOP whose tenant could not be told is answered with an error (the network delivers it
// again) after it was stored; the redelivery finishes it: the tenant is told, and the inbox
// holds one message, not two. After that, the same text is a new message.
func TestRedeliveryFinishesAMessageTheTenantMissed(t *testing.T) {
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	key := sha256.Sum256([]byte("inbound-test-key"))
	a, err := st.CreateAccount(ctx, persistence.NewAccount{Email: "inbound@example.com", PasswordHash: "x",
		FullName: "Wanjiku Kamau", CompanyName: "Acme", APIKeyHash: key[:], APIKeyPrefix: "sk_live_abcd"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AssignInboundNumber(ctx, a.ID, "22384", carriers.Safaricom); err != nil {
		t.Fatal(err)
	}
	ts := &tenants{fail: 1}
	h := inbound.New(inbound.Options{}, inbound.Deps{Store: st, Tenants: ts})
	if _, err := h.ReceiveFrom(ctx, "254712345678", "22384", carriers.Safaricom, "STOP"); !errors.Is(err, errBusy) {
		t.Fatalf("first delivery: %v; want the tenant's failure", err)
	}
	r, err := h.ReceiveFrom(ctx, "254712345678", "22384", carriers.Safaricom, "STOP")
	if err != nil || !r.Suppressed || len(ts.changes) != 1 || ts.changes[0] != 712345678 {
		t.Fatalf("redelivery = %+v, %v, tenant told %v; want the suppression told", r, err, ts.changes)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func() (n int) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM inbound_messages WHERE account_id = $1`, a.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d messages stored; want the one", n)
	}
	if _, err := h.ReceiveFrom(ctx, "254712345678", "22384", carriers.Safaricom, "STOP"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("%d messages stored after a second STOP; want 2", n)
	}
}
