package persistence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func TestKeyword(t *testing.T) {
	for _, c := range []struct {
		text   string
		word   string
		action persistence.KeywordAction
	}{
		{"STOP", "STOP", persistence.KeywordOptOut},
		{"stop please", "STOP", persistence.KeywordOptOut},
		{"  Stop.", "STOP", persistence.KeywordOptOut},
		{"\tstopall\n", "STOPALL", persistence.KeywordOptOut},
		{"Unsubscribe me", "UNSUBSCRIBE", persistence.KeywordOptOut},
		{"cancel", "CANCEL", persistence.KeywordOptOut},
		{"END", "END", persistence.KeywordOptOut},
		{"quit!", "QUIT", persistence.KeywordOptOut},
		{"acha", "ACHA", persistence.KeywordOptOut},
		{"Sitisha tafadhali", "SITISHA", persistence.KeywordOptOut},
		{"start", "START", persistence.KeywordOptIn},
		{"Anza", "ANZA", persistence.KeywordOptIn},
		{"stopped", "", persistence.KeywordNone},
		{"please stop", "", persistence.KeywordNone},
		{"", "", persistence.KeywordNone},
		{"   ", "", persistence.KeywordNone},
		{"\xff\xfe stop", "", persistence.KeywordNone},
		{"hello", "", persistence.KeywordNone},
	} {
		w, a := persistence.Keyword(c.text)
		if w != c.word || a != c.action {
			t.Errorf("Keyword(%q) = %q, %d; want %q, %d", c.text, w, a, c.word, c.action)
		}
	}
}

func TestAssignInboundNumber(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, _ := st.CreateAccount(ctx, newAccount("inbound-a@example.com"))
	b, _ := st.CreateAccount(ctx, newAccount("inbound-b@example.com"))

	n, added, err := st.AssignInboundNumber(ctx, a.ID, "22384", carriers.Safaricom)
	if err != nil || !added || n.AccountID != a.ID || n.CreatedAt.IsZero() {
		t.Fatalf("assign = %+v, %v, %v; want added to a", n, added, err)
	}
	again, added, err := st.AssignInboundNumber(ctx, a.ID, "22384", carriers.Airtel)
	if err != nil || added || again != n {
		t.Errorf("assign again = %+v, %v, %v; want %+v unchanged", again, added, err, n)
	}
	if _, _, err := st.AssignInboundNumber(ctx, b.ID, "22384", carriers.Safaricom); !errors.Is(err, persistence.ErrInboundNumberTaken) {
		t.Errorf("assign to b = %v; want ErrInboundNumberTaken", err)
	}
	if _, added, err := st.AssignInboundNumber(ctx, b.ID, "+254700123456", carriers.Safaricom); err != nil || !added {
		t.Errorf("assign a long number to b = %v, %v", added, err)
	}
}

// inboundFixture is an account with an inbound number, a contact and a webhook endpoint
// subscribed to the inbound events.
func inboundFixture(t *testing.T) (*persistence.Store, string, uuid.UUID) {
	t.Helper()
	st, dbURL := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("inbound@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AssignInboundNumber(ctx, a.ID, "22384", carriers.Safaricom); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateContact(ctx, persistence.NewContact{AccountID: a.ID, Phone: "+254712345678", FirstName: "Wanjiku"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateWebhook(ctx, persistence.NewWebhook{AccountID: a.ID, URL: "https://example.com/hook",
		Events: []string{"message.received", "optout.created", "optout.removed"}}); err != nil {
		t.Fatal(err)
	}
	return st, dbURL, a.ID
}

// handled receives a message as the inbound handler does: stored, then settled once its
// tenant holds what it changed.
func handled(ctx context.Context, st *persistence.Store, in persistence.NewInbound) (persistence.InboundResult, error) {
	r, err := st.ReceiveInbound(ctx, in)
	if err != nil {
		return r, err
	}
	return r, st.SettleInbound(ctx, r.Message.ID)
}

// events are the types of the outbox events written for an account, oldest first.
func events(t *testing.T, dbURL string, acct uuid.UUID) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT e.types[1] FROM webhook_events e
		JOIN webhook_endpoints w ON w.id = e.endpoint_id WHERE w.account_id = $1 ORDER BY e.id`, acct)
	if err != nil {
		t.Fatal(err)
	}
	codes, err := pgx.CollectRows(rows, pgx.RowTo[int16])
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = string(persistence.EventTypes()[c])
	}
	return out
}

// STOP suppresses the sender (keyword), opts out its contact and raises optout.created;
// START lifts only that suppression and raises optout.removed; a suppression the account
// made is not lifted by START.
func TestReceiveInboundKeywords(t *testing.T) {
	st, dbURL, acct := inboundFixture(t)
	ctx := context.Background()
	const contactNSN, strangerNSN = 712345678, 733000111

	r, err := handled(ctx, st, persistence.NewInbound{From: contactNSN, To: "22384", Network: carriers.Safaricom, Text: "stop please"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Suppressed || r.Lifted || r.OptedOut != 1 || r.Message.Keyword != "STOP" || r.Message.AccountID == nil || *r.Message.AccountID != acct {
		t.Errorf("STOP = %+v", r)
	}
	s, err := st.Suppressions(ctx, acct, persistence.SuppressionFilter{}, 10)
	if err != nil || len(s) != 1 || s[0].NSN != contactNSN || s[0].Source != persistence.SuppressedByKeyword {
		t.Errorf("suppressions after STOP = %+v, %v", s, err)
	}
	contacts, _, err := st.ListContacts(ctx, acct, persistence.ContactFilter{}, persistence.Page{Number: 1, Size: 10})
	if err != nil || len(contacts) != 0 {
		t.Errorf("active contacts after STOP = %+v, %v; want none", contacts, err)
	}

	// Again: still suppressed, nothing new to report.
	if r, err := handled(ctx, st, persistence.NewInbound{From: contactNSN, To: "22384", Network: carriers.Safaricom, Text: "STOP"}); err != nil || !r.Suppressed || r.OptedOut != 0 {
		t.Errorf("STOP again = %+v, %v", r, err)
	}
	// A sender with no contact is suppressed all the same.
	if r, err := handled(ctx, st, persistence.NewInbound{From: strangerNSN, To: "22384", Network: carriers.Airtel, Text: "ACHA"}); err != nil || !r.Suppressed || r.OptedOut != 0 {
		t.Errorf("ACHA from a stranger = %+v, %v", r, err)
	}
	if nsns, err := st.SuppressedNumbers(ctx, acct); err != nil || len(nsns) != 2 {
		t.Errorf("suppressed numbers = %v, %v; want 2", nsns, err)
	}

	if r, err := handled(ctx, st, persistence.NewInbound{From: contactNSN, To: "22384", Network: carriers.Safaricom, Text: "Start"}); err != nil || !r.Lifted {
		t.Errorf("START = %+v, %v; want lifted", r, err)
	}
	if r, err := handled(ctx, st, persistence.NewInbound{From: contactNSN, To: "22384", Network: carriers.Safaricom, Text: "anza"}); err != nil || r.Lifted {
		t.Errorf("ANZA with nothing to lift = %+v, %v", r, err)
	}
	// The account's own suppression stays whatever the number sends.
	if _, _, err := st.Suppress(ctx, acct, 722000333, persistence.SuppressedByAPI, "asked by phone"); err != nil {
		t.Fatal(err)
	}
	if r, err := handled(ctx, st, persistence.NewInbound{From: 722000333, To: "22384", Network: carriers.Safaricom, Text: "START"}); err != nil || r.Lifted {
		t.Errorf("START over an api suppression = %+v, %v; want nothing lifted", r, err)
	}
	if nsns, err := st.SuppressedNumbers(ctx, acct); err != nil || len(nsns) != 2 || nsns[0] != 722000333 || nsns[1] != strangerNSN {
		t.Errorf("suppressed numbers = %v, %v; want the api one and the stranger", nsns, err)
	}

	want := []string{"message.received", "optout.created", "message.received", "message.received", "optout.created",
		"message.received", "optout.removed", "message.received", "message.received"}
	if got := events(t, dbURL, acct); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

// A message to a number no account has is kept unrouted: no account lists it, and a keyword
// in it changes no list. Odd text is stored, never refused.
func TestReceiveInboundUnroutedAndOddText(t *testing.T) {
	st, dbURL, acct := inboundFixture(t)
	ctx := context.Background()
	r, err := handled(ctx, st, persistence.NewInbound{From: 712000001, To: "99999", Network: carriers.Safaricom, Text: "STOP"})
	if err != nil || r.Message.AccountID != nil || r.Suppressed {
		t.Fatalf("unrouted = %+v, %v", r, err)
	}
	if u, err := st.UnroutedInbound(ctx, 10); err != nil || len(u) != 1 || u[0].ID != r.Message.ID || u[0].Keyword != "STOP" {
		t.Errorf("unrouted list = %+v, %v", u, err)
	}
	if nsns, _ := st.SuppressedNumbers(ctx, acct); len(nsns) != 0 {
		t.Errorf("an unrouted STOP suppressed %v", nsns)
	}

	long := strings.Repeat("ñ", 20000)
	for _, c := range []struct{ in, stored string }{
		{"", ""},
		{long, long},
		{"bad \xff\xfe bytes", "bad \uFFFD bytes"},
		{"nul \x00 here", "nul \uFFFD here"},
	} {
		r, err := handled(ctx, st, persistence.NewInbound{From: 712000002, To: "22384", Network: carriers.Safaricom, Text: c.in})
		if err != nil || r.Message.Text != c.stored {
			t.Errorf("receive %.20q = %.40q, %v; want it stored as %.20q", c.in, r.Message.Text, err, c.stored)
		}
	}
	list, err := st.InboundMessages(ctx, acct, persistence.InboundFilter{}, 10)
	if err != nil || len(list) != 4 || list[0].Text != "nul \uFFFD here" || list[3].Text != "" {
		t.Fatalf("inbox = %d messages, %v", len(list), err)
	}
	if got := events(t, dbURL, acct); len(got) != 4 {
		t.Errorf("events = %v; want 4 message.received", got)
	}
}

// The inbox runs newest first, pages by id and filters by sender.
func TestInboundMessagesList(t *testing.T) {
	st, _, acct := inboundFixture(t)
	ctx := context.Background()
	var ids []uuid.UUID
	for i := range 5 {
		r, err := handled(ctx, st, persistence.NewInbound{From: uint32(712000010 + i%2), To: "22384", Network: carriers.Safaricom, Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]uuid.UUID{r.Message.ID}, ids...)
	}
	page, err := st.InboundMessages(ctx, acct, persistence.InboundFilter{}, 3)
	if err != nil || len(page) != 3 || page[0].ID != ids[0] || page[2].ID != ids[2] {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	rest, err := st.InboundMessages(ctx, acct, persistence.InboundFilter{After: &page[2].ID}, 3)
	if err != nil || len(rest) != 2 || rest[0].ID != ids[3] || rest[1].ID != ids[4] {
		t.Errorf("second page = %+v, %v", rest, err)
	}
	from, err := st.InboundMessages(ctx, acct, persistence.InboundFilter{From: 712000010}, 10)
	if err != nil || len(from) != 3 {
		t.Errorf("from 0712000010 = %d, %v; want 3", len(from), err)
	}
	other, _ := st.CreateAccount(ctx, newAccount("inbound-other@example.com"))
	if l, err := st.InboundMessages(ctx, other.ID, persistence.InboundFilter{}, 10); err != nil || len(l) != 0 {
		t.Errorf("another account's inbox = %+v, %v; want empty", l, err)
	}
}
