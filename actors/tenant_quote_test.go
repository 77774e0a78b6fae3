package actors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// exec runs a statement against the world's database.
func (w *world) exec(q string, args ...any) {
	w.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// approvedSender gives an account an approved, active sender on a network, its default or
// not, and makes a live tenant see it.
func (w *world) approvedSender(acct uuid.UUID, name, network string, isDefault bool) persistence.Sender {
	w.t.Helper()
	id := persistence.NewID()
	w.exec(`INSERT INTO sender_ids (id, account_id, name, network, status, is_active, is_default, fee_paid)
		VALUES ($1, $2, $3, $4, 'approved', true, $5, true)`, id, acct, name, network, isDefault)
	if err := w.eng.AccountChanged(context.Background(), acct); err != nil {
		w.t.Fatal(err)
	}
	return persistence.Sender{ID: id, Name: name, Network: network}
}

func (w *world) quote(req actors.SendRequest) actors.Quote {
	w.t.Helper()
	q, err := w.eng.Quote(context.Background(), req)
	if err != nil {
		w.t.Fatalf("quote: %v", err)
	}
	return q
}

// mixed is n recipients on each network, in network order.
func mixed(n int, seed uint64) []persistence.Recipient {
	var rs []persistence.Recipient
	for i, net := range carriers.Networks() {
		rs = append(rs, recipients(n, net, seed+uint64(i))...)
	}
	return rs
}

// A quote is exactly what the send of the same request then stores and debits: its cost is
// the debit, the ledger entry and the sum of the message rows, its counts are the rows', and
// the text it describes is the rows' text, parts and encoding on the network it describes.
func TestQuoteEqualsSend(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	ctx := context.Background()
	long := strings.Repeat("a", 155) // one part alone, two with "Acme: "
	tests := []struct {
		name  string
		setup func(acct uuid.UUID) *persistence.Sender // returns the explicit sender, if any
		rs    []persistence.Recipient
		text  string
		// want: the described text, its parts and encoding, and the price per part
		asSent   string
		parts    int
		encoding carriers.Encoding
		price    int64
	}{
		{name: "shared sender, company prefix", rs: mixed(3, 1), text: "Hello",
			asSent: "Acme: Hello", parts: 1, encoding: carriers.GSM7, price: 50},
		{name: "default sender on every network", rs: mixed(2, 2), text: long,
			setup:  func(acct uuid.UUID) *persistence.Sender { w.approvedSender(acct, "ACMEDEF", "all", true); return nil },
			asSent: long, parts: 1, encoding: carriers.GSM7, price: 50},
		{name: "default sender on safaricom only: the others' prefix pushes them to two parts", rs: mixed(2, 3), text: long,
			setup: func(acct uuid.UUID) *persistence.Sender {
				w.approvedSender(acct, "ACMESAF", "safaricom", true)
				return nil
			},
			asSent: "Acme: " + long, parts: 2, encoding: carriers.GSM7, price: 50},
		{name: "default sender on safaricom only, only safaricom recipients", rs: recipients(4, carriers.Safaricom, 4), text: long,
			setup: func(acct uuid.UUID) *persistence.Sender {
				w.approvedSender(acct, "ACMESAF", "safaricom", true)
				return nil
			},
			asSent: long, parts: 1, encoding: carriers.GSM7, price: 50},
		{name: "explicit sender on airtel only", rs: mixed(2, 5), text: "Sale now on",
			setup: func(acct uuid.UUID) *persistence.Sender {
				s := w.approvedSender(acct, "ACMEAIR", "airtel", false)
				return &s
			},
			asSent: "Acme: Sale now on", parts: 1, encoding: carriers.GSM7, price: 50},
		{name: "explicit sender over the default", rs: mixed(1, 6), text: "Hi",
			setup: func(acct uuid.UUID) *persistence.Sender {
				w.approvedSender(acct, "ACMEDEF", "safaricom", true)
				s := w.approvedSender(acct, "ACMEALL", "all", false)
				return &s
			},
			asSent: "Hi", parts: 1, encoding: carriers.GSM7, price: 50},
		{name: "UCS-2", rs: mixed(1, 7), text: "Don’t miss it " + strings.Repeat("x", 60),
			asSent: "Acme: Don’t miss it " + strings.Repeat("x", 60), parts: 2, encoding: carriers.UCS2, price: 50},
		{name: "pinned tier", rs: mixed(2, 8), text: "Hi",
			setup: func(acct uuid.UUID) *persistence.Sender {
				tier := "Enterprise"
				if err := w.eng.SetPricing(ctx, acct, &tier, false); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			asSent: "Acme: Hi", parts: 1, encoding: carriers.GSM7, price: 42},
		{name: "internal account", rs: mixed(1, 9), text: "Hi",
			setup: func(acct uuid.UUID) *persistence.Sender {
				if err := w.eng.SetPricing(ctx, acct, nil, true); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			asSent: "Acme: Hi", parts: 1, encoding: carriers.GSM7, price: 0},
		{name: "above the inline limit", rs: recipients(250, carriers.NetworkUnknown, 10), text: long,
			asSent: "Acme: " + long, parts: 2, encoding: carriers.GSM7, price: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acct := w.account(1000_00)
			var explicit *persistence.Sender
			if tt.setup != nil {
				explicit = tt.setup(acct)
			}
			req := actors.SendRequest{AccountID: acct, Recipients: tt.rs, Message: tt.text, Sender: explicit, Source: "api"}
			q := w.quote(req)
			var byNet [carriers.NetworkSlots]int
			for _, r := range tt.rs {
				byNet[r.Network]++
			}
			if q.Recipients != len(tt.rs) || q.ByNetwork != byNet || q.MessageAsSent != tt.asSent || q.Parts != tt.parts ||
				q.Encoding != tt.encoding || q.Characters != len([]rune(tt.asSent)) {
				t.Fatalf("quote = %+v; want %d recipients %v, %q in %d %v parts", q, len(tt.rs), byNet, tt.asSent, tt.parts, tt.encoding)
			}
			if q.AvailableCents != 1000_00 || !q.Sufficient {
				t.Errorf("quote balance %d, sufficient %v; want 100000, true", q.AvailableCents, q.Sufficient)
			}
			if n := w.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, acct); n != 0 {
				t.Fatalf("a quote wrote %d jobs", n)
			}
			res, err := w.eng.Send(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.CostCents != q.CostCents || res.Recipients != q.Recipients {
				t.Errorf("send = %+v; quote said %d recipients costing %d", res, q.Recipients, q.CostCents)
			}
			if q.CostCents%max(tt.price, 1) != 0 || (tt.price == 0) != (q.CostCents == 0) {
				t.Errorf("quote cost %d is not a multiple of the price %d", q.CostCents, tt.price)
			}
			if debit := w.sqlInt(`SELECT coalesce(sum(amount_cents), -1) FROM wallet_transactions WHERE job_id = $1 AND type = 'debit'`, res.JobID); debit != q.CostCents {
				t.Errorf("ledger debit %d; quote said %d", debit, q.CostCents)
			}
			if b := w.balance(acct); b != 1000_00-q.CostCents {
				t.Errorf("balance %d; want %d", b, 1000_00-q.CostCents)
			}
			eventually(t, 10*time.Second, "every message row written", func() (bool, string) {
				n := w.sqlInt(`SELECT count(*) FROM messages WHERE job_id = $1`, res.JobID)
				return n == int64(len(tt.rs)), fmt.Sprint(n)
			})
			if sum := w.sqlInt(`SELECT sum(cost_cents) FROM messages WHERE job_id = $1`, res.JobID); sum != q.CostCents {
				t.Errorf("message rows cost %d; quote said %d", sum, q.CostCents)
			}
			for _, n := range carriers.Networks() {
				if got := w.sqlInt(`SELECT count(*) FROM messages WHERE job_id = $1 AND network = $2`, res.JobID, int16(n)); got != int64(byNet[n]) {
					t.Errorf("%s: %d message rows; quote said %d", n, got, byNet[n])
				}
			}
			msgs, _, err := w.st.ListMessages(ctx, acct, persistence.MessageFilter{JobID: &res.JobID}, persistence.Page{Number: 1, Size: len(tt.rs)})
			if err != nil {
				t.Fatal(err)
			}
			described := 0
			for _, m := range msgs {
				if m.Text == q.MessageAsSent {
					described++
					if m.Parts != q.Parts || m.Encoding != q.Encoding || m.CostCents != int64(q.Parts)*tt.price {
						t.Errorf("message %s: %d %v parts costing %d; quote said %d %v at %d", m.Text, m.Parts, m.Encoding, m.CostCents, q.Parts, q.Encoding, tt.price)
					}
				}
			}
			if described == 0 {
				t.Errorf("no message goes out as %q", q.MessageAsSent)
			}
		})
	}
}

// A quote sees what the tenant's next send would use: a profile or pricing change made
// through the engine, a new default sender and a credit, each at the very next quote.
func TestQuoteReadsYourWrites(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	ctx := context.Background()
	acct := w.account(10_00)
	req := actors.SendRequest{AccountID: acct, Recipients: mixed(1, 11), Message: "Hi", Source: "api"}
	if q := w.quote(req); q.MessageAsSent != "Acme: Hi" || q.CostCents != 150 {
		t.Fatalf("first quote = %+v; want Acme's prefix at 3 × 50", q)
	}
	for i := range 5 {
		company := fmt.Sprintf("Beta %d", i)
		if _, err := w.st.UpdateProfile(ctx, acct, persistence.ProfileUpdate{CompanyName: &company}); err != nil {
			t.Fatal(err)
		}
		if err := w.eng.AccountChanged(ctx, acct); err != nil {
			t.Fatal(err)
		}
		if q := w.quote(req); q.MessageAsSent != company+": Hi" {
			t.Fatalf("quote after renaming to %q: %q", company, q.MessageAsSent)
		}
		tier := actors.Tiers()[i].Name
		if err := w.eng.SetPricing(ctx, acct, &tier, false); err != nil {
			t.Fatal(err)
		}
		if q, want := w.quote(req), 3*actors.Tiers()[i].PriceCents; q.CostCents != want {
			t.Fatalf("quote after pinning %s: cost %d; want %d", tier, q.CostCents, want)
		}
	}
	if _, err := w.eng.Credit(ctx, persistence.NewCredit{AccountID: acct, Cents: 5_00, Type: "topup", Description: "more"}); err != nil {
		t.Fatal(err)
	}
	if q := w.quote(req); q.AvailableCents != 15_00 {
		t.Fatalf("quote after a credit: available %d; want 1500", q.AvailableCents)
	}
	w.approvedSender(acct, "BETA", "all", true)
	if q := w.quote(req); q.MessageAsSent != "Hi" {
		t.Fatalf("quote after a default sender: %q; want no prefix", q.MessageAsSent)
	}
	empty := ""
	if _, err := w.st.UpdateProfile(ctx, acct, persistence.ProfileUpdate{CompanyName: &empty}); err != nil {
		t.Fatal(err)
	}
	w.exec(`UPDATE sender_ids SET is_default = false WHERE account_id = $1`, acct)
	if err := w.eng.AccountChanged(ctx, acct); err != nil {
		t.Fatal(err)
	}
	if q := w.quote(req); q.MessageAsSent != "Hi" {
		t.Fatalf("quote without a company name: %q; want no prefix", q.MessageAsSent)
	}
}

// A quote checks the cost against the balance a send would, reserves nothing and writes
// nothing; and the send it approves then goes through.
func TestQuoteBalanceAndSufficiency(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	ctx := context.Background()
	acct := w.account(99) // two one-part SMS cost 1.00 KES
	two := actors.SendRequest{AccountID: acct, Recipients: recipients(2, carriers.Safaricom, 12), Message: "Hi", Source: "api"}
	q := w.quote(two)
	if q.CostCents != 100 || q.AvailableCents != 99 || q.Sufficient {
		t.Fatalf("quote = %+v; want 100 of 99 available, insufficient", q)
	}
	_, err := w.eng.Send(ctx, two)
	var ib *actors.InsufficientBalanceError
	if !errors.As(err, &ib) || ib.AvailableCents != q.AvailableCents || ib.CostCents != q.CostCents {
		t.Fatalf("send = %v; want the quote's refusal", err)
	}
	one := two
	one.Recipients = two.Recipients[:1]
	for range 10 { // quotes reserve nothing
		if q := w.quote(one); q.CostCents != 50 || q.AvailableCents != 99 || !q.Sufficient {
			t.Fatalf("quote = %+v; want 50 of 99 available, sufficient", q)
		}
	}
	if _, err := w.eng.Send(ctx, one); err != nil {
		t.Fatal(err)
	}
	if q := w.quote(one); q.AvailableCents != 49 || q.Sufficient {
		t.Fatalf("quote after a send = %+v; want 49 available, insufficient", q)
	}
	if n := w.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, acct); n != 1 {
		t.Errorf("%d jobs; want the one send's", n)
	}
	none := one
	none.Recipients = nil
	if q := w.quote(none); q.Recipients != 0 || q.CostCents != 0 || !q.Sufficient || q.MessageAsSent != "Acme: Hi" || q.Parts != 1 {
		t.Errorf("quote without recipients = %+v; want nothing to pay and Safaricom's text", q)
	}
}

// The look-alike suggestion is priced as the send of the replaced text would be, and is
// offered only when every text the send goes out with becomes GSM-7.
func TestQuoteSuggestion(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	ctx := context.Background()
	acct := w.account(1000_00)
	text := "Don’t miss our sale — 50% off… " + strings.Repeat("x", 60)
	req := actors.SendRequest{AccountID: acct, Recipients: mixed(2, 13), Message: text, Source: "api"}
	q := w.quote(req)
	s := q.Suggestion
	if q.Encoding != carriers.UCS2 || q.Parts != 2 || s == nil {
		t.Fatalf("quote = %+v; want 2 UCS-2 parts and a suggestion", q)
	}
	wantMsg := "Don't miss our sale - 50% off... " + strings.Repeat("x", 60)
	wantReps := []carriers.Replacement{{From: "’", To: "'", Count: 1}, {From: "—", To: "-", Count: 1}, {From: "…", To: "...", Count: 1}}
	if s.Message != wantMsg || s.MessageAsSent != "Acme: "+wantMsg || s.Encoding != carriers.GSM7 || s.Parts != 1 ||
		fmt.Sprint(s.Replacements) != fmt.Sprint(wantReps) {
		t.Fatalf("suggestion = %+v; want %q in one GSM-7 part, replacing %v", s, wantMsg, wantReps)
	}
	if s.CostCents != 6*50 || q.CostCents != 6*2*50 {
		t.Errorf("costs: quote %d, suggestion %d; want 600 and 300", q.CostCents, s.CostCents)
	}
	sent := req
	sent.Message = s.Message
	if res, err := w.eng.Send(ctx, sent); err != nil || res.CostCents != s.CostCents {
		t.Errorf("send of the suggestion = %+v, %v; want cost %d", res, err, s.CostCents)
	}

	if q := w.quote(actors.SendRequest{AccountID: acct, Recipients: mixed(1, 14), Message: "Plain", Source: "api"}); q.Suggestion != nil {
		t.Errorf("GSM-7 quote has a suggestion %+v", q.Suggestion)
	}
	if q := w.quote(actors.SendRequest{AccountID: acct, Recipients: mixed(1, 15), Message: "Don’t 🙂", Source: "api"}); q.Suggestion != nil {
		t.Errorf("quote with an emoji has a suggestion %+v", q.Suggestion)
	}
	// A company name that needs UCS-2 keeps every prefixed text UCS-2: nothing to suggest
	// while a network gets the prefix; once a default sender covers all, the message decides.
	company := "Zoë’s"
	if _, err := w.st.UpdateProfile(ctx, acct, persistence.ProfileUpdate{CompanyName: &company}); err != nil {
		t.Fatal(err)
	}
	if err := w.eng.AccountChanged(ctx, acct); err != nil {
		t.Fatal(err)
	}
	if q := w.quote(req); q.Suggestion != nil || q.MessageAsSent != "Zoë’s: "+text {
		t.Errorf("quote with a UCS-2 company name = %+v; want the prefixed text, no suggestion", q)
	}
	w.approvedSender(acct, "ZOE", "safaricom", true)
	if q := w.quote(req); q.Suggestion != nil {
		t.Errorf("quote with airtel and telkom still prefixed has a suggestion %+v", q.Suggestion)
	}
	only := req
	only.Recipients = recipients(3, carriers.Safaricom, 16)
	if q := w.quote(only); q.Suggestion == nil || q.Suggestion.MessageAsSent != wantMsg || q.Suggestion.CostCents != 3*50 {
		t.Errorf("quote to safaricom only (its default sender, no prefix) = %+v; want the suggestion %q at 150", q, wantMsg)
	}
}

// A send's and a campaign's reference is stored with the job and shows with its messages.
func TestReferenceIsStored(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	ctx := context.Background()
	acct := w.account(1000_00)
	ref := "order-2024/0042"
	res, err := w.eng.Send(ctx, actors.SendRequest{AccountID: acct, Recipients: mixed(1, 17), Message: "Hi", Source: "api", Reference: &ref})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.eng.Send(ctx, actors.SendRequest{AccountID: acct, Recipients: mixed(1, 18), Message: "Hi", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	msgs, total, err := w.st.ListMessages(ctx, acct, persistence.MessageFilter{Reference: &ref}, persistence.Page{Number: 1, Size: 10})
	if err != nil || total != 3 || len(msgs) != 3 {
		t.Fatalf("messages with reference: %d of %d, %v; want 3", len(msgs), total, err)
	}
	for _, m := range msgs {
		if m.JobID != res.JobID || m.Reference == nil || *m.Reference != ref {
			t.Errorf("message %+v; want job %s with reference %q", m, res.JobID, ref)
		}
	}
	if j, err := w.st.JobByID(ctx, acct, res.JobID); err != nil || j.Reference == nil || *j.Reference != ref {
		t.Errorf("job = %+v, %v; want reference %q", j, err, ref)
	}

	c := persistence.NewCampaign{ID: persistence.NewID(), Name: "Launch", Template: "Hi {first_name}", GroupID: uuid.New(), GroupName: "All"}
	audience := []persistence.Member{{Recipient: recipients(1, carriers.Airtel, 19)[0], FirstName: "Ann"}}
	if _, err := w.eng.CreateCampaign(ctx, actors.CampaignRequest{AccountID: acct, Campaign: c, Audience: audience, Reference: &ref}); err != nil {
		t.Fatal(err)
	}
	if got, err := w.st.Campaign(ctx, acct, c.ID); err != nil || got.Reference == nil || *got.Reference != ref {
		t.Errorf("campaign = %+v, %v; want reference %q", got, err, ref)
	}

	for _, bad := range []string{"", strings.Repeat("x", 65), "tab\there", "naïve"} {
		_, err := w.eng.Send(ctx, actors.SendRequest{AccountID: acct, Recipients: mixed(1, 20), Message: "Hi", Source: "api", Reference: &bad})
		if !errors.Is(err, actors.ErrInvalidReference) {
			t.Errorf("send with reference %q: %v; want ErrInvalidReference", bad, err)
		}
	}
}

func TestValidReference(t *testing.T) {
	for ref, want := range map[string]bool{
		"a": true, "order-42": true, strings.Repeat("x", 64): true, " ~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}": true,
		"": false, strings.Repeat("x", 65): false, "new\nline": false, "del\x7f": false, "é": false, "tab\t": false,
	} {
		if got := actors.ValidReference(ref); got != want {
			t.Errorf("ValidReference(%q) = %v; want %v", ref, got, want)
		}
	}
}
