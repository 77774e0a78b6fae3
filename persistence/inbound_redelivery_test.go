package persistence_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// A message delivered again before its first delivery was settled (its deliver_sm answered
// with an error after the commit) is the same message: no second row, event or SMPP push, and
// the same answer (a STOP still suppresses, its confirmation is the same job). Once settled,
// the same text again is a new message; another text or sender never matches.
func TestRedeliveredInboundIsTheSameMessage(t *testing.T) {
	st, conn, acct := replyFixture(t, "Acme", "all")
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `INSERT INTO smpp_credentials (id, account_id, system_id, password_hash)
		VALUES (tuma_uuidv7(), $1, 'acme', 'x')`, acct); err != nil {
		t.Fatal(err)
	}
	stop := persistence.NewInbound{From: 712345678, To: "22384", Network: carriers.Safaricom, Text: "STOP"}
	first, err := st.ReceiveInbound(ctx, stop)
	if err != nil || !first.Suppressed || first.ReplyJobID == uuid.Nil {
		t.Fatalf("first STOP = %+v, %v", first, err)
	}
	again, err := st.ReceiveInbound(ctx, stop)
	if err != nil || again.Message.ID != first.Message.ID || !again.Suppressed || again.ReplyJobID != first.ReplyJobID ||
		!again.Message.ReceivedAt.Equal(first.Message.ReceivedAt) || again.Message.Keyword != "STOP" {
		t.Fatalf("redelivered STOP = %+v, %v; want the first %+v", again, err, first)
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, q, acct).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := `SELECT count(*) FROM inbound_messages WHERE account_id = $1`
	pushes := `SELECT count(*) FROM smpp_receipts WHERE account_id = $1 AND kind = 'inbound'`
	if r, p := count(rows), count(pushes); r != 1 || p != 1 {
		t.Fatalf("%d rows and %d SMPP pushes after a redelivery; want 1 and 1", r, p)
	}
	if _, err := st.ReceiveInbound(ctx, persistence.NewInbound{From: 712345679, To: "22384", Network: carriers.Safaricom, Text: "STOP"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReceiveInbound(ctx, persistence.NewInbound{From: 712345678, To: "22384", Network: carriers.Safaricom, Text: "STOP now"}); err != nil {
		t.Fatal(err)
	}
	if r := count(rows); r != 3 {
		t.Fatalf("%d rows; another sender and another text are new messages (3)", r)
	}
	if err := st.SettleInbound(ctx, first.Message.ID); err != nil {
		t.Fatal(err)
	}
	later, err := st.ReceiveInbound(ctx, stop)
	if err != nil || later.Message.ID == first.Message.ID || !later.Suppressed {
		t.Fatalf("STOP after the first was settled = %+v, %v; want a new message", later, err)
	}
	if r, p := count(rows), count(pushes); r != 4 || p != 4 {
		t.Errorf("%d rows and %d SMPP pushes; want 4 and 4", r, p)
	}
}
