package persistence_test

import (
	"testing"

	"github.com/tuma-sms/tuma/persistence"
)

// The one table of moves says what the spec's state table says, and nothing more.
func TestSenderTransitions(t *testing.T) {
	type move struct {
		event persistence.SenderEvent
		from  persistence.SenderStatus
	}
	allowed := map[move]persistence.SenderStatus{
		{persistence.EventSubmitDocuments, persistence.SenderApplied}:    persistence.SenderDocumentsSubmitted,
		{persistence.EventApprove, persistence.SenderDocumentsSubmitted}: persistence.SenderApproved,
		{persistence.EventApprove, persistence.SenderPaymentPending}:     persistence.SenderApproved,
		{persistence.EventReject, persistence.SenderDocumentsSubmitted}:  persistence.SenderRejected,
		{persistence.EventReject, persistence.SenderPaymentPending}:      persistence.SenderRejected,
		{persistence.EventReapply, persistence.SenderRejected}:           persistence.SenderDocumentsSubmitted,
		{persistence.EventSetDefault, persistence.SenderApproved}:        persistence.SenderApproved,
		{persistence.EventCancel, persistence.SenderApplied}:             persistence.SenderCancelled,
		{persistence.EventCancel, persistence.SenderDocumentsSubmitted}:  persistence.SenderCancelled,
		{persistence.EventCancel, persistence.SenderPaymentPending}:      persistence.SenderCancelled,
		{persistence.EventCancel, persistence.SenderRejected}:            persistence.SenderCancelled,
		{persistence.EventCancel, persistence.SenderApproved}:            persistence.SenderCancelled, // only when not active: a condition of the row
		{persistence.EventPay, persistence.SenderApplied}:                persistence.SenderApplied,
		{persistence.EventPay, persistence.SenderDocumentsSubmitted}:     persistence.SenderDocumentsSubmitted,
		{persistence.EventPay, persistence.SenderPaymentPending}:         persistence.SenderPaymentPending,
		{persistence.EventPay, persistence.SenderRejected}:               persistence.SenderRejected,
	}
	events := []persistence.SenderEvent{persistence.EventSubmitDocuments, persistence.EventReapply, persistence.EventApprove,
		persistence.EventReject, persistence.EventCancel, persistence.EventSetDefault, persistence.EventPay}
	for _, e := range events {
		for _, s := range persistence.SenderStatuses() {
			to, ok := persistence.SenderTransition(e, s)
			want, wantOK := allowed[move{e, s}]
			if ok != wantOK || to != want {
				t.Errorf("%s from %s: %q, %v; want %q, %v", e, s, to, ok, want, wantOK)
			}
		}
	}
}
