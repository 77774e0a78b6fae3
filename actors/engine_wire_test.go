package actors

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tuma-sms/tuma/actors/wire"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// Every command crosses nodes and comes back as it left.
func TestWireCommandsRoundTrip(t *testing.T) {
	acct, job, sender, group := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	ref, tier := "order-17", "gold"
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	key := &persistence.IdempotencyKey{AccountID: acct, Key: "k1", Claim: uuid.New()}
	send := SendRequest{AccountID: acct, Recipients: []persistence.Recipient{{NSN: 712345678, Network: carriers.Safaricom},
		{NSN: 733000111, Network: carriers.Airtel}}, Message: "Habari", Sender: &persistence.Sender{ID: sender, Name: "DUKA", Network: "all"},
		Source: "smpp", Idempotency: key, Reference: &ref, Promotional: true, Receipt: persistence.ReceiptFailure}
	cases := []any{
		&sendCmd{req: send},
		&quoteCmd{req: SendRequest{AccountID: acct, Message: "x"}},
		&campaignCmd{req: CampaignRequest{AccountID: acct, Campaign: persistence.NewCampaign{ID: uuid.New(), Name: "Nov", Template: "Hi {first_name}",
			GroupID: group, GroupName: "All", SenderID: &sender, ScheduledAt: &at},
			Audience:    []persistence.Member{{Recipient: persistence.Recipient{NSN: 712000000, Network: carriers.Safaricom}, FirstName: "Wanjiru", LastName: "K"}},
			Idempotency: key, Reference: &ref}},
		&cancelCmd{campaign: uuid.New()},
		&creditCmd{c: persistence.NewCredit{AccountID: acct, Cents: 500, Type: "topup", Reference: "r", Description: "d", Idempotency: key}},
		&pricingCmd{tier: &tier, internal: true},
		&accountChangedCmd{},
		&suppressionChangedCmd{nsn: 712345678, suppressed: true},
		&walletChanged{wallet: persistence.WalletSnapshot{AccountID: acct, BalanceCents: 100, Version: 3, LifetimeSMS: 9}},
		&startJob{id: job},
	}
	for _, c := range cases {
		w, err := wireCommand(acct, c)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		b, err := proto.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		back := w.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		id, got, err := commandOf(back)
		if err != nil || id != acct {
			t.Fatalf("%T back: account %s, %v", c, id, err)
		}
		// The receiving node stamps its own arrival time.
		switch g := got.(type) {
		case *sendCmd:
			g.at = time.Time{}
		case *campaignCmd:
			g.at = time.Time{}
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T came back as %+v; want %+v", c, got, c)
		}
	}
	pay := &paymentCmd{c: persistence.PaymentConfirmation{Reference: "TUMA-1", PaidAt: at}}
	w, _ := wireCommand(acct, pay)
	if _, got, err := commandOf(w); err != nil || got.(*paymentCmd).c.Reference != "TUMA-1" || !got.(*paymentCmd).c.PaidAt.Equal(at) ||
		got.(*paymentCmd).c.Notice == nil {
		t.Errorf("payment came back as %+v, %v; want its reference, time and the top-up notice", got, err)
	}
}

// Answers, and the errors callers tell apart, come back as they left.
func TestWireRepliesRoundTrip(t *testing.T) {
	paid := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	code := "AC1"
	replies := []any{
		&SendResult{JobID: uuid.New(), Recipients: 2, Suppressed: 1, Units: 4, CostCents: 200, MessageIDs: []uuid.UUID{uuid.New()}},
		&Quote{Recipients: 2, ByNetwork: [carriers.NetworkSlots]int{0, 1, 1, 0}, MessageAsSent: "Hi", Encoding: carriers.GSM7, Characters: 2,
			Parts: 1, CostCents: 100, AvailableCents: 500, Sufficient: true, Suggestion: &QuoteSuggestion{
				Replacements: []carriers.Replacement{{From: "’", To: "'", Count: 1}}, Message: "it's", MessageAsSent: "it's", Encoding: carriers.GSM7, Parts: 1, CostCents: 50}},
		&persistence.WalletSnapshot{AccountID: uuid.New(), BalanceCents: 10, Version: 2, LifetimeSMS: 5},
		&persistence.ConfirmedPayment{Applied: true, Payment: persistence.Payment{ID: uuid.New(), AccountID: uuid.New(), Reference: "TUMA-1",
			Purpose: "topup", AmountCents: 1000, Currency: "KES", Email: "a@b.c", Provider: "sandbox", Status: "paid", AccessCode: &code,
			PaidAt: &paid, CreatedAt: paid}, Wallet: &persistence.WalletSnapshot{AccountID: uuid.New(), BalanceCents: 1000}},
		&struct{}{},
	}
	for _, r := range replies {
		got, err := wireReplyOf(wireReply(r, nil))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("%T came back as %+v, %v; want %+v", r, got, err, r)
		}
	}
	errs := []error{ErrStopping, ErrBusy, ErrFenced, ErrAllSuppressed, persistence.ErrNotFound, persistence.ErrIdempotencyLost,
		&persistence.CampaignStateError{Status: "completed"}, errMoved}
	for _, e := range errs {
		_, err := wireReplyOf(wireReply(nil, e))
		if !errors.Is(err, e) && !errors.Is(e, errors.Unwrap(err)) {
			t.Errorf("%v came back as %v, which is not it", e, err)
		}
		if err.Error() != e.Error() {
			t.Errorf("%v came back saying %q", e, err)
		}
	}
	_, err := wireReplyOf(wireReply(nil, &InsufficientBalanceError{AvailableCents: 5, CostCents: 9}))
	var ib *InsufficientBalanceError
	if !errors.As(err, &ib) || ib.AvailableCents != 5 || ib.CostCents != 9 || !errors.Is(err, persistence.ErrInsufficientBalance) {
		t.Errorf("insufficient balance came back as %v", err)
	}
}

// FuzzWireCommand: whatever bytes another node sends decode into a command or an error, never a
// panic.
func FuzzWireCommand(f *testing.F) {
	acct := uuid.New()
	for _, c := range []any{&sendCmd{req: SendRequest{AccountID: acct, Recipients: []persistence.Recipient{{NSN: 712345678, Network: 1}}}},
		&campaignCmd{req: CampaignRequest{AccountID: acct}}, &startJob{id: acct}} {
		w, _ := wireCommand(acct, c)
		b, _ := proto.Marshal(w)
		f.Add(byte(0), b)
	}
	kinds := []func() proto.Message{
		func() proto.Message { return &wire.SendRequest{} }, func() proto.Message { return &wire.CampaignRequest{} },
		func() proto.Message { return &wire.CancelCampaign{} }, func() proto.Message { return &wire.Credit{} },
		func() proto.Message { return &wire.ConfirmPayment{} }, func() proto.Message { return &wire.SetPricing{} },
		func() proto.Message { return &wire.WalletChanged{} }, func() proto.Message { return &wire.StartJob{} },
		func() proto.Message { return &wire.SuppressionChanged{} }, func() proto.Message { return &wire.Quote{} },
		func() proto.Message { return &wire.ConfirmedPayment{} }, func() proto.Message { return &wire.SendResult{} },
	}
	f.Fuzz(func(t *testing.T, kind byte, b []byte) {
		m := kinds[int(kind)%len(kinds)]()
		if proto.Unmarshal(b, m) != nil {
			return
		}
		if _, _, err := commandOf(m); err != nil && !errors.Is(err, errBadWire) {
			t.Errorf("%T: %v; want errBadWire or a command", m, err)
		}
		_, _ = wireReplyOf(m)
	})
}
