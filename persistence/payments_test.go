package persistence_test

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func TestPaymentReference(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		ref := persistence.PaymentReference(persistence.NewID())
		if !regexp.MustCompile(`^TUMA-[0-9A-Z]{26}$`).MatchString(ref) || seen[ref] {
			t.Fatalf("reference %q (seen before: %v)", ref, seen[ref])
		}
		seen[ref] = true
	}
}

func TestConfirmTopupCreditsOnceUnderConcurrency(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("payer@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.CreatePayment(ctx, persistence.NewPayment{AccountID: a.ID, Purpose: persistence.PurposeTopup, AmountCents: 150000,
		Email: a.Email, Provider: "paystack"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != persistence.PaymentPending || p.Currency != "KES" {
		t.Fatalf("new payment %+v", p)
	}
	notice := func(amount, balance int64) persistence.NewNotification {
		return persistence.NewNotification{Type: "topup_success", Title: "t", Message: "m"}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for range 10 {
		wg.Go(func() {
			res, err := st.ConfirmPayment(ctx, persistence.PaymentConfirmation{Reference: p.Reference, PaidAt: time.Now(), Notice: notice})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Payment.Status != persistence.PaymentPaid {
				t.Errorf("status %s after confirming", res.Payment.Status)
			}
			if res.Applied {
				mu.Lock()
				applied++
				mu.Unlock()
				if res.Wallet == nil || res.Wallet.BalanceCents != 150000 {
					t.Errorf("wallet after the credit: %+v", res.Wallet)
				}
			}
		})
	}
	wg.Wait()
	if applied != 1 {
		t.Fatalf("%d confirmations applied; want exactly 1", applied)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var balance, entries, notices int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT balance_cents FROM wallets WHERE account_id = $1),
		(SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'topup' AND reference = $2),
		(SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'topup_success')`, a.ID, p.Reference).
		Scan(&balance, &entries, &notices); err != nil {
		t.Fatal(err)
	}
	if balance != 150000 || entries != 1 || notices != 1 {
		t.Errorf("balance %d, %d ledger entries, %d notifications; want 150000, 1, 1", balance, entries, notices)
	}
	// A failed payment can no longer be confirmed.
	q, _ := st.CreatePayment(ctx, persistence.NewPayment{AccountID: a.ID, Purpose: persistence.PurposeTopup, AmountCents: 5000,
		Email: a.Email, Provider: "paystack"})
	if changed, err := st.MarkPayment(ctx, q.Reference, persistence.PaymentFailed, "amount_mismatch"); err != nil || !changed {
		t.Fatalf("mark failed: %v %v", changed, err)
	}
	if _, err := st.ConfirmPayment(ctx, persistence.PaymentConfirmation{Reference: q.Reference, PaidAt: time.Now()}); !errors.Is(err, persistence.ErrPaymentClosed) {
		t.Errorf("confirming a failed payment: %v; want ErrPaymentClosed", err)
	}
	if changed, _ := st.MarkPayment(ctx, p.Reference, persistence.PaymentAbandoned, "late"); changed {
		t.Error("a paid payment was marked abandoned")
	}
	if _, err := st.ConfirmPayment(ctx, persistence.PaymentConfirmation{Reference: "TUMA-NOSUCH"}); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("unknown reference: %v", err)
	}
}

// feeFixture is an account with a sender ID waiting for its fee, and a checkout of that fee.
func feeFixture(t *testing.T, email string) (*persistence.Store, *pgx.Conn, persistence.Account, uuid.UUID, persistence.Payment) {
	t.Helper()
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount(email))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	sender := persistence.NewID()
	if _, err := conn.Exec(ctx, `INSERT INTO sender_ids (id, account_id, name, network, status, registration_fee_cents)
		VALUES ($1, $2, 'ACME', 'safaricom', 'payment_pending', 600000)`, sender, a.ID); err != nil {
		t.Fatal(err)
	}
	p, err := st.CreatePayment(ctx, persistence.NewPayment{AccountID: a.ID, Purpose: persistence.PurposeSenderFee, SenderID: &sender,
		AmountCents: 600000, Email: a.Email, Provider: "paystack"})
	if err != nil {
		t.Fatal(err)
	}
	return st, conn, a, sender, p
}

func TestConfirmSenderFeeMarksFeePaidWithoutTouchingTheBalance(t *testing.T) {
	st, conn, a, sender, p := feeFixture(t, "brand@example.com")
	ctx := context.Background()
	res, err := st.ConfirmPayment(ctx, persistence.PaymentConfirmation{Reference: p.Reference, PaidAt: time.Now()})
	if err != nil || !res.Applied || res.Wallet != nil {
		t.Fatalf("confirm = %+v, %v; want applied without a wallet change", res, err)
	}
	var paid bool
	var balance, fee int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT fee_paid FROM sender_ids WHERE id = $1),
		(SELECT balance_cents FROM wallets WHERE account_id = $2),
		(SELECT amount_cents FROM wallet_transactions WHERE account_id = $2 AND type = 'sender_id_fee' AND reference = $3)`,
		sender, a.ID, p.Reference).Scan(&paid, &balance, &fee); err != nil {
		t.Fatal(err)
	}
	if !paid || balance != 0 || fee != 600000 {
		t.Errorf("fee_paid %v, balance %d, sender_id_fee entry %d; want true, 0, 600000", paid, balance, fee)
	}
	// The same fee paid again through a second checkout (two tabs) is not taken twice: it is
	// credited to the wallet.
	second, err := st.CreatePayment(ctx, persistence.NewPayment{AccountID: a.ID, Purpose: persistence.PurposeSenderFee, SenderID: &sender,
		AmountCents: 600000, Email: a.Email, Provider: "paystack"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = st.ConfirmPayment(ctx, persistence.PaymentConfirmation{Reference: second.Reference, PaidAt: time.Now()})
	if err != nil || !res.Applied || res.Wallet == nil || res.Wallet.BalanceCents != 600000 {
		t.Fatalf("the second fee payment = %+v, %v; want it applied to the wallet (600000)", res, err)
	}
	var fees, topups int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE type = 'sender_id_fee'), count(*) FILTER (WHERE type = 'topup')
		FROM wallet_transactions WHERE account_id = $1`, a.ID).Scan(&fees, &topups); err != nil {
		t.Fatal(err)
	}
	if fees != 1 || topups != 1 {
		t.Errorf("%d fee entries and %d top-ups; want the fee once and the second payment credited", fees, topups)
	}
	// A sender fee payment must name its sender.
	if _, err := st.CreatePayment(ctx, persistence.NewPayment{AccountID: a.ID, Purpose: persistence.PurposeSenderFee, AmountCents: 1,
		Email: a.Email, Provider: "paystack"}); err == nil {
		t.Error("a sender fee payment without a sender was stored")
	}
}

func TestLowBalanceAlertOncePerCrossing(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("low@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	n := persistence.NewNotification{Type: "low_balance", Title: "Low", Message: "Low"}
	// The tenant actor decides; repeated decisions before a recovery (two nodes, a restart
	// replaying the decision) add one notification.
	for i, want := range []bool{true, false, false} {
		if added, err := st.LowBalanceAlert(ctx, a.ID, n); err != nil || added != want {
			t.Fatalf("alert %d: added %v, %v; want %v", i, added, err, want)
		}
	}
	if err := st.LowBalanceRecovered(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.LowBalanceRecovered(ctx, a.ID); err != nil { // twice is the same as once
		t.Fatal(err)
	}
	if added, err := st.LowBalanceAlert(ctx, a.ID, n); err != nil || !added {
		t.Fatalf("after recovering: added %v, %v; want a new alert", added, err)
	}
	if added, _ := st.LowBalanceAlert(ctx, a.ID, n); added {
		t.Error("alerted twice in one crossing")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var count int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'low_balance'`, a.ID).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != 2 {
		t.Errorf("%d low_balance notifications; want 2", count)
	}
}

// The reconciler's rounds take every open checkout in turn, those asked about longest ago
// first: a hundred old ones left open (abandoned carts) do not keep a newer one from its turn.
func TestOpenPaymentsTakeTurns(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, newAccount("carts@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for range 150 {
		p, err := st.CreatePayment(ctx, persistence.NewPayment{AccountID: a.ID, Purpose: persistence.PurposeTopup, AmountCents: 1000,
			Email: a.Email, Provider: "paystack"})
		if err != nil {
			t.Fatal(err)
		}
		all[p.Reference] = false
	}
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	first, err := st.OpenPayments(ctx, from, to, 100)
	if err != nil || len(first) != 100 {
		t.Fatalf("first round: %d, %v; want 100", len(first), err)
	}
	for _, p := range first {
		all[p.Reference] = true
	}
	second, err := st.OpenPayments(ctx, from, to, 100)
	if err != nil || len(second) != 100 {
		t.Fatalf("second round: %d, %v; want 100", len(second), err)
	}
	for _, p := range second {
		all[p.Reference] = true
	}
	for ref, asked := range all {
		if !asked {
			t.Errorf("%s not asked about in two rounds of 100 over 150 open checkouts", ref)
		}
	}
}

// A sender fee's checkout whose last attempt was declined is still the one a second pay gets:
// the payer tries again on it. One the payer cancelled is not: the next pay starts a new one
// (the sandbox's cancelled checkout can no longer be paid; every pay led back to it for a day).
func TestPendingSenderFeeIncludesAbandoned(t *testing.T) {
	st, _, a, sender, p := feeFixture(t, "fee-again@example.com")
	ctx := context.Background()
	if err := st.PaymentStarted(ctx, persistence.StartedPayment{ID: p.ID, AccessCode: "ac_1", AuthorizationURL: "https://checkout.example/ac_1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkPayment(ctx, p.Reference, persistence.PaymentAbandoned, "declined"); err != nil {
		t.Fatal(err)
	}
	open, err := st.PendingSenderFee(ctx, a.ID, sender)
	if err != nil || open == nil || open.Reference != p.Reference {
		t.Fatalf("the open fee checkout = %+v, %v; want the declined one, %s", open, err, p.Reference)
	}
	if _, err := st.MarkPayment(ctx, p.Reference, persistence.PaymentAbandoned, "cancelled"); err != nil {
		t.Fatal(err)
	}
	if open, err := st.PendingSenderFee(ctx, a.ID, sender); err != nil || open != nil {
		t.Errorf("the open fee checkout after the payer cancelled = %+v, %v; want none", open, err)
	}
}

// A fee paid for an application cancelled while its checkout was open is the account's:
// credited to the wallet, the payment confirmed. It was refused (the application was not
// found), so the payment was never confirmed and the money recorded nowhere.
func TestSenderFeePaidAfterCancellingGoesToTheWallet(t *testing.T) {
	st, conn, a, sender, p := feeFixture(t, "cancelled-fee@example.com")
	ctx := context.Background()
	if err := st.CancelSenderID(ctx, a.ID, sender); err != nil {
		t.Fatal(err)
	}
	res, err := st.ConfirmPayment(ctx, persistence.PaymentConfirmation{Reference: p.Reference, PaidAt: time.Now()})
	if err != nil || !res.Applied || res.Wallet == nil || res.Wallet.BalanceCents != 600000 {
		t.Fatalf("confirm = %+v, %v; want it applied to the wallet (600000)", res, err)
	}
	var paid bool
	var fees, topups int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT fee_paid FROM sender_ids WHERE id = $1),
		(SELECT count(*) FROM wallet_transactions WHERE account_id = $2 AND type = 'sender_id_fee'),
		(SELECT count(*) FROM wallet_transactions WHERE account_id = $2 AND type = 'topup' AND reference = $3)`,
		sender, a.ID, p.Reference).Scan(&paid, &fees, &topups); err != nil {
		t.Fatal(err)
	}
	if paid || fees != 0 || topups != 1 {
		t.Errorf("fee_paid %v, %d fee entries, %d top-ups of the payment; want false, 0, 1", paid, fees, topups)
	}
}
