package actors

import (
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

func TestSentIDsFindOnlyWhatTheyRemember(t *testing.T) {
	s := newSentIDs(4)
	acct := uuid.New()
	sub := func(pid string, n carriers.Network) persistence.Submitted {
		return persistence.Submitted{AccountID: acct, MessageID: uuid.New(), ProviderID: pid, Network: n}
	}
	a, b := sub("a", carriers.Safaricom), sub("a", carriers.Airtel) // one id, two networks
	s.remember(a)
	s.remember(b)
	s.remember(sub("", carriers.Safaricom)) // no answer: nothing to remember
	if m, ok := s.take(lateKey{"a", carriers.Airtel}); !ok || m.id != b.MessageID {
		t.Fatalf("take(a, airtel) = %v, %v; want %v", m, ok, b.MessageID)
	}
	if _, ok := s.take(lateKey{"a", carriers.Airtel}); ok {
		t.Fatal("a receipt's id was found twice")
	}
	if _, ok := s.take(lateKey{"", carriers.Safaricom}); ok {
		t.Fatal("an empty provider id matched")
	}
	// A carrier repeating an id: the latest submission wins, and evicting the earlier one
	// leaves the latest findable.
	again := sub("a", carriers.Safaricom)
	s.remember(again)
	for i := range 3 { // a's slot is overwritten by these
		s.remember(sub("x"+strconv.Itoa(i), carriers.Telkom))
	}
	if m, ok := s.take(lateKey{"a", carriers.Safaricom}); !ok || m.id != again.MessageID {
		t.Fatalf("take(a, safaricom) = %v, %v; want the latest, %v", m, ok, again.MessageID)
	}
	// Beyond the ring's size the oldest are forgotten: a miss, never a wrong message.
	for i := range 10 {
		s.remember(sub("y"+strconv.Itoa(i), carriers.Telkom))
	}
	for i := range 10 {
		_, ok := s.take(lateKey{"y" + strconv.Itoa(i), carriers.Telkom})
		if want := i >= 6; ok != want {
			t.Errorf("take(y%d) found %v; want %v (ring of 4)", i, ok, want)
		}
	}
	if len(s.index) != 0 {
		t.Errorf("index holds %d entries after every remembered id was taken or evicted", len(s.index))
	}
}

// A hash collision only points at the wrong entry: the full key is compared.
func TestSentIDsCollisionIsAMiss(t *testing.T) {
	s := newSentIDs(4)
	sub := persistence.Submitted{AccountID: uuid.New(), MessageID: uuid.New(), ProviderID: "p", Network: carriers.Safaricom}
	s.remember(sub)
	other := lateKey{"q", carriers.Safaricom}
	s.index[s.hash(other)] = s.index[s.hash(lateKey{"p", carriers.Safaricom})] // force a collision
	if _, ok := s.take(other); ok {
		t.Fatal("a colliding id matched another's message")
	}
	if m, ok := s.take(lateKey{"p", carriers.Safaricom}); !ok || m.id != sub.MessageID {
		t.Fatalf("take(p) = %v, %v after a collision elsewhere", m, ok)
	}
}
