package actors_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
)

// creditThenFail commits the first credit and answers an error, as a connection lost at the
// commit does.
type creditThenFail struct {
	actors.Store
	failed atomic.Bool
}

func (s *creditThenFail) Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error) {
	w, err := s.Store.Credit(ctx, c)
	if err == nil && s.failed.CompareAndSwap(false, true) {
		return persistence.WalletSnapshot{}, errors.New("connection reset at commit")
	}
	return w, err
}

// A credit that committed though its caller was told it failed reaches the tenant all the
// same: it reads the wallet again, and the sends the money pays for are accepted.
func TestCreditOfUnknownOutcomeIsReadBack(t *testing.T) {
	var fail *creditThenFail
	w := newWorldWith(t, actors.Options{}, nil, func(w *world) {
		fail = &creditThenFail{Store: w.st}
		w.store = fail
	})
	acct := w.account(0)
	rs := recipients(1, 0, 11)
	if _, err := w.send(acct, rs, "hello"); !errors.Is(err, persistence.ErrInsufficientBalance) {
		t.Fatalf("a send with nothing in the wallet: %v; want insufficient balance", err)
	}
	if _, err := w.eng.Credit(context.Background(), persistence.NewCredit{AccountID: acct, Cents: 100_000, Type: "topup",
		Description: "test funds"}); err == nil || !fail.failed.Load() {
		t.Fatalf("the credit answered %v; want the commit's error", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := w.send(acct, rs, "hello")
		if err == nil {
			break
		}
		if !errors.Is(err, persistence.ErrInsufficientBalance) || time.Now().After(deadline) {
			t.Fatalf("a send after the credit committed: %v; want it accepted within 10 s", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failFirstAlert refuses the first low-balance alert, writing nothing, as a database that
// is briefly away does.
type failFirstAlert struct {
	actors.Store
	failed atomic.Bool
}

func (s *failFirstAlert) LowBalanceAlert(ctx context.Context, id uuid.UUID, n persistence.NewNotification) (bool, error) {
	if s.failed.CompareAndSwap(false, true) {
		return false, errors.New("connection refused")
	}
	return s.Store.LowBalanceAlert(ctx, id, n)
}

// A low-balance alert whose write failed is written again: the account is told of the
// crossing, not only of the next one.
func TestLowBalanceAlertSurvivesAFailedWrite(t *testing.T) {
	var fail *failFirstAlert
	w := newWorldWith(t, actors.Options{LowBalanceCents: 1_000_000}, nil, func(w *world) {
		fail = &failFirstAlert{Store: w.st}
		w.store = fail
	})
	acct := w.account(1_000_030) // one message (50 cents) takes it under
	if _, err := w.send(acct, recipients(1, 0, 5), "hello"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the low_balance notification", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'low_balance'`, acct)
		return n == 1 && fail.failed.Load(), fmt.Sprintf("%d notifications, first write failed: %v", n, fail.failed.Load())
	})
}

// A send whose message id is taken (an SMPP submit sent again after its first send's answer
// was lost) is refused ErrDuplicateMessage, charged nothing, and the account's next send goes
// as usual: the reservation is given back.
func TestSendOfATakenMessageIDIsRefused(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	acct := w.account(1_000)
	id := persistence.NewID()
	req := actors.SendRequest{AccountID: acct, Recipients: recipients(1, 0, 3), Message: "hello", Source: "smpp", MessageID: id}
	first, err := w.eng.Send(context.Background(), req)
	if err != nil || len(first.MessageIDs) != 1 || first.MessageIDs[0] != id {
		t.Fatalf("first send = %+v, %v", first, err)
	}
	after := w.balance(acct)
	if _, err := w.eng.Send(context.Background(), req); !errors.Is(err, persistence.ErrDuplicateMessage) {
		t.Fatalf("the same message id again: %v; want ErrDuplicateMessage", err)
	}
	if b := w.balance(acct); b != after {
		t.Errorf("balance %d after the refused send; want %d", b, after)
	}
	if _, err := w.send(acct, recipients(1, 0, 4), "next"); err != nil {
		t.Errorf("the next send: %v", err)
	}
}

// A balance that recovered while the account had no tenant to hear of it (a credit's news is
// dropped then) re-arms the alert when a tenant next loads the account: the next crossing is
// notified as the first was (it was swallowed).
func TestLowBalanceRearmsOnLoadAfterARecovery(t *testing.T) {
	w := newWorld(t, actors.Options{LowBalanceCents: 1_000_000}, nil)
	acct := w.account(1_000_030) // one message (50 cents) takes it under
	notices := func() int64 {
		return w.sqlInt(`SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'low_balance'`, acct)
	}
	if _, err := w.send(acct, recipients(1, 0, 5), "hello"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first low_balance notification", func() (bool, string) {
		return notices() == 1, fmt.Sprint(notices())
	})
	// A credit the tenant does not hear of, then a new incarnation of the tenant.
	if _, err := w.st.Credit(context.Background(), persistence.NewCredit{AccountID: acct, Cents: 100, Type: "topup", Description: "test"}); err != nil {
		t.Fatal(err)
	}
	if !actors.PanicTenant(w.eng, acct) {
		t.Fatal("the account has no tenant")
	}
	// 1,000,080 after the credit: one message keeps it over, the next takes it under again.
	for i := range 2 {
		if _, err := w.send(acct, recipients(1, 0, uint64(6+i)), "hello"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "a second low_balance notification", func() (bool, string) {
		return notices() == 2, fmt.Sprint(notices())
	})
}
