package persistence_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// replyFixture is an account of company, with the inbound number 22384 and, unless network is
// "", an approved default sender ACME registered on network.
func replyFixture(t *testing.T, company, network string) (*persistence.Store, *pgx.Conn, uuid.UUID) {
	t.Helper()
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	na := newAccount("reply@example.com")
	na.CompanyName = company
	a, err := st.CreateAccount(ctx, na)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AssignInboundNumber(ctx, a.ID, "22384", carriers.Safaricom); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if network != "" {
		if _, err := conn.Exec(ctx, `INSERT INTO sender_ids (id, account_id, name, network, status, is_active, is_default, fee_paid)
			VALUES (tuma_uuidv7(), $1, 'ACME', $2, 'approved', true, true, true)`, a.ID, network); err != nil {
			t.Fatal(err)
		}
	}
	return st, conn, a.ID
}

// receive is a message to 22384 that the store must take, handled to the end (settled).
func receive(t *testing.T, st *persistence.Store, from uint32, n carriers.Network, text string) persistence.InboundResult {
	t.Helper()
	r, err := handled(context.Background(), st, persistence.NewInbound{From: from, To: "22384", Network: n, Text: text})
	if err != nil {
		t.Fatalf("receive %q from %d: %v", text, from, err)
	}
	return r
}

// reply is the confirmation job r wrote, with its one open message; the test fails unless r
// wrote one.
func reply(t *testing.T, st *persistence.Store, r persistence.InboundResult) (persistence.JobRecord, persistence.OpenMessage) {
	t.Helper()
	ctx := context.Background()
	if r.ReplyJobID == uuid.Nil {
		t.Fatalf("%s from %d: no confirmation written", r.Message.Text, r.Message.From)
	}
	j, err := st.JobRecord(ctx, r.ReplyJobID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := st.OpenMessages(ctx, j.ID, uuid.Nil, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("the confirmation's open messages = %+v, %v; want one", msgs, err)
	}
	return j, msgs[0]
}

// A keyword is confirmed by a free job of one queued message from the account's sender, open
// for dispatch, in the keyword's language; each kind once a number a day, a STOP whether or
// not the number was suppressed already, a START only when the number is on no list after it.
func TestKeywordReplies(t *testing.T) {
	st, conn, acct := replyFixture(t, "Acme", "all")
	ctx := context.Background()
	before, err := st.Wallet(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}

	r := receive(t, st, 712345678, carriers.Safaricom, "stop please")
	j, m := reply(t, st, r)
	if j.Source != persistence.SourceKeyword || j.Message != "You will no longer receive messages from Acme. Reply START to subscribe again." ||
		j.CostCents != 0 || j.PriceCents != 0 || j.Recipients != 1 || j.Units != 1 ||
		j.Senders[carriers.Safaricom] != "ACME" || j.Prefixed[carriers.Safaricom] {
		t.Errorf("STOP's confirmation job = %+v", j.NewJob)
	}
	var counts []int32
	if err := conn.QueryRow(ctx, `SELECT network_counts FROM jobs WHERE id = $1`, j.ID).Scan(&counts); err != nil || len(counts) != 3 ||
		counts[0] != 1 || counts[1] != 0 || counts[2] != 0 {
		t.Errorf("the confirmation's network counts = %v, %v; want one Safaricom recipient", counts, err)
	}
	if m.Recipient != "+254712345678" || m.Network != carriers.Safaricom || m.Sender != "ACME" || m.Status != "queued" ||
		m.CostCents != 0 || m.Parts != 1 || m.Encoding != carriers.GSM7 || m.Body != nil {
		t.Errorf("STOP's confirmation = %+v", m)
	}
	if open, err := st.OpenJobs(ctx, acct, uuid.Nil, uuid.Max, 0, 10, true); err != nil || len(open) != 1 || open[0] != j.ID {
		t.Errorf("open jobs = %v, %v; want the confirmation's", open, err)
	}
	// It goes to the number it confirms the suppression of: a STOP's job shares its
	// suppression's time, which would otherwise leave the number out.
	if out, err := st.SuppressedSince(ctx, acct, j.ID, []uint32{712345678}); err != nil || len(out) != 0 {
		t.Errorf("suppressed since the STOP's confirmation = %v, %v; want none", out, err)
	}
	after, err := st.Wallet(ctx, acct)
	if err != nil || after != before {
		t.Errorf("wallet after the confirmation = %+v, %v; want it as it was, %+v", after, err, before)
	}
	if c, err := st.MessageCounts(ctx, acct); err != nil || c != (persistence.MessageCounts{Queued: 1}) {
		t.Errorf("message counts = %+v, %v; want the confirmation queued", c, err)
	}

	// Once a day however it is asked, in either language.
	for _, text := range []string{"STOP", "acha", "Unsubscribe"} {
		if r := receive(t, st, 712345678, carriers.Safaricom, text); !r.Suppressed || r.ReplyJobID != uuid.Nil {
			t.Errorf("%s again the same day = %+v; want suppressed, not confirmed again", text, r)
		}
	}

	start := receive(t, st, 712345678, carriers.Safaricom, "START")
	if j, _ := reply(t, st, start); !start.Lifted || j.Message != "You are subscribed again to messages from Acme. Reply STOP to stop." {
		t.Errorf("START = %+v, confirmed %q", start, j.Message)
	}
	// STOP after today's START: no second STOP confirmation, and the START's, suppressed since
	// it was written, is left out like any message.
	if r := receive(t, st, 712345678, carriers.Safaricom, "stop"); r.ReplyJobID != uuid.Nil {
		t.Errorf("second STOP of the day confirmed: %+v", r)
	}
	if out, err := st.SuppressedSince(ctx, acct, start.ReplyJobID, []uint32{712345678}); err != nil || !out[712345678] {
		t.Errorf("suppressed since the START's confirmation = %v, %v; want the number", out, err)
	}

	// A new day (Africa/Nairobi): confirmed again.
	if _, err := conn.Exec(ctx, `UPDATE keyword_replies SET day = day - 1 WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, st, 712345678, carriers.Safaricom, "STOP"); r.ReplyJobID == uuid.Nil {
		t.Errorf("STOP the next day = %+v; want confirmed", r)
	}

	// Swahili keywords in Swahili; a number never suppressed and of no contact, on another network.
	if j, m := reply(t, st, receive(t, st, 733000111, carriers.Airtel, "Acha")); j.Message != "Hutapokea tena ujumbe kutoka kwa Acme. Tuma ANZA kujiunga tena." ||
		m.Network != carriers.Airtel || m.Recipient != "+254733000111" {
		t.Errorf("ACHA's confirmation = %q to %s on %s", j.Message, m.Recipient, m.Network)
	}
	if j, _ := reply(t, st, receive(t, st, 722000444, carriers.Safaricom, "anza")); j.Message != "Umejiunga tena na ujumbe kutoka kwa Acme. Tuma ACHA kusitisha." {
		t.Errorf("ANZA's confirmation = %q", j.Message)
	}
	// START leaves the account's own suppression: nothing to confirm.
	if _, _, err := st.Suppress(ctx, acct, 722000333, persistence.SuppressedByAPI, "asked by phone"); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, st, 722000333, carriers.Safaricom, "START"); r.ReplyJobID != uuid.Nil {
		t.Errorf("START over an api suppression confirmed: %+v", r)
	}
	// Nor is a message without a keyword answered.
	if r := receive(t, st, 722000555, carriers.Safaricom, "hello"); r.ReplyJobID != uuid.Nil {
		t.Errorf("hello answered: %+v", r)
	}
	var claims int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM keyword_replies WHERE account_id = $1`, acct).Scan(&claims); err != nil || claims != 5 {
		t.Errorf("%d keyword replies claimed, %v; want 5", claims, err)
	}
}

// Only an account's own sender confirms, on the networks it covers: none from the shared
// sender, and none to a network the sender is not registered on.
func TestKeywordRepliesNeedTheAccountsSender(t *testing.T) {
	st, _, _ := replyFixture(t, "Acme", "")
	if r := receive(t, st, 712345678, carriers.Safaricom, "STOP"); !r.Suppressed || r.ReplyJobID != uuid.Nil {
		t.Errorf("STOP to an account with only the shared sender = %+v; want suppressed, unanswered", r)
	}
	st, _, _ = replyFixture(t, "Acme", "safaricom")
	if r := receive(t, st, 733000111, carriers.Airtel, "STOP"); !r.Suppressed || r.ReplyJobID != uuid.Nil {
		t.Errorf("STOP from Airtel to a Safaricom-only sender = %+v; want unanswered", r)
	}
	reply(t, st, receive(t, st, 712345678, carriers.Safaricom, "STOP"))
}

// A company name that would take the confirmation past one GSM-7 part is written with its
// look-alike characters replaced, else the sender's name stands in for it.
func TestKeywordReplyTextStaysOnePart(t *testing.T) {
	for _, c := range []struct{ company, want string }{
		{"Mama’s Kitchen", "You will no longer receive messages from Mama's Kitchen. Reply START to subscribe again."},
		{"Kahawa ☕ Bora", "You will no longer receive messages from ACME. Reply START to subscribe again."},
	} {
		st, _, _ := replyFixture(t, c.company, "all")
		j, m := reply(t, st, receive(t, st, 712345678, carriers.Safaricom, "STOP"))
		if j.Message != c.want || m.Parts != 1 || m.Encoding != carriers.GSM7 {
			t.Errorf("company %q: confirmation %q in %d %s parts; want %q in one GSM-7 part", c.company, j.Message, m.Parts, m.Encoding, c.want)
		}
	}
}
