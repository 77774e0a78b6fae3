package sim

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tuma-sms/tuma/carriers"
)

func TestLostAnswersAreAcceptedAndFoundByLookup(t *testing.T) {
	var receipts int
	done := make(chan struct{}, 100)
	n := newNetwork(t, Options{Network: carriers.Safaricom, LostAnswerRate: 1, OnReceipt: func(Receipt) { receipts++; done <- struct{}{} }})
	ctx := context.Background()
	s := submission()
	s.MessageID = "lost-1"
	if _, err := n.Submit(ctx, s); !errors.Is(err, ErrLostAnswer) {
		t.Fatalf("Submit = %v; want ErrLostAnswer", err)
	}
	id, err := n.Lookup(ctx, "lost-1")
	if err != nil || id == "" {
		t.Fatalf("Lookup of the lost answer = %q, %v; want its provider id", id, err)
	}
	if r, err := n.Query(ctx, id); err != nil || r.ProviderID != id {
		t.Errorf("Query(%s) = %+v, %v", id, r, err)
	}
	<-done // the message was accepted: it gets its receipt
	if st := n.Stats(); st.Accepted != 1 || st.Lost != 1 {
		t.Errorf("stats %+v; want 1 accepted, 1 lost", st)
	}
	if _, err := n.Lookup(ctx, "never-sent"); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("Lookup of an unknown message = %v; want ErrUnknownMessage", err)
	}
}

func TestLookupMemoryIsBounded(t *testing.T) {
	n := newNetwork(t, Options{Network: carriers.Airtel})
	ctx := context.Background()
	s := submission()
	s.Destination = "+254733000000"
	for i := range lookupMemory + 10 {
		s.MessageID = fmt.Sprint(i)
		if _, err := n.Submit(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Lookup(ctx, "0"); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("the oldest submission is still remembered (%v)", err)
	}
	if _, err := n.Lookup(ctx, fmt.Sprint(lookupMemory+9)); err != nil {
		t.Errorf("the newest submission is forgotten: %v", err)
	}
	if len(n.memory.ids) != lookupMemory {
		t.Errorf("memory holds %d ids; want %d", len(n.memory.ids), lookupMemory)
	}
}
