package smppserver

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// A receipt's deliver_sm: DELIVRD or UNDELIV in the text and message_state alike, the handset
// as source, the sender as destination (alphanumeric or a number), text in ASCII.
func TestReceiptPDU(t *testing.T) {
	at := time.Date(2026, 11, 26, 6, 1, 0, 0, time.UTC)
	id := uuid.New()
	for _, tc := range []struct {
		status        persistence.MessageStatus
		sender        string
		stat, err     string
		state         smpp.MessageState
		destTON       byte
		text, wantTxt string
	}{
		{persistence.MessageDelivered, "ACMEBANK", "DELIVRD", "000", smpp.StateDelivered, 5, "Habari 😀", "Habari ?"},
		{persistence.MessageFailed, "22384", "UNDELIV", "001", smpp.StateUndeliverable, 1, "hi", "hi"},
	} {
		p := receiptPDU(7, &persistence.SMPPReceipt{MessageID: id, Status: tc.status, Recipient: "+254712345678",
			Sender: tc.sender, Text: tc.text, SubmittedAt: at, DoneAt: at.Add(time.Minute)})
		rt, ok := smpp.ParseReceiptText(p.ShortMessage)
		state, _ := p.TLV(smpp.TagMessageState)
		rid, _ := p.TLV(smpp.TagReceiptedMessageID)
		if !ok || rt.ID != id.String() || rt.Stat != tc.stat || rt.Err != tc.err || rt.Text != tc.wantTxt ||
			!rt.Done.Equal(at.Add(time.Minute)) || len(state) != 1 || smpp.MessageState(state[0]) != tc.state ||
			string(rid) != id.String()+"\x00" {
			t.Errorf("%s: receipt %q, state %v, receipted_message_id %q", tc.status, p.ShortMessage, state, rid)
		}
		if p.ID != smpp.DeliverSM || p.Seq != 7 || !p.IsReceipt() || p.Source != "254712345678" || p.Dest != tc.sender ||
			p.DestTON != tc.destTON {
			t.Errorf("%s: deliver_sm = %+v", tc.status, p.Header)
		}
	}
}
