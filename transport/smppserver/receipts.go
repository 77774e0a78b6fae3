// Delivery receipts: the server's own goroutine claims each bound account's receipts
// (persistence.ClaimSMPPReceipts, leased, so several nodes never send one at once) and sends
// them as deliver_sm on one of the account's receiver or transceiver binds, oldest first. A
// receipt is done only when its deliver_sm_resp is ESME_ROK; any other answer, none in time,
// or a bind that went away returns it to be sent again.

package smppserver

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// Receipts stores the receipts owed to SMPP clients (persistence.Store).
type Receipts interface {
	ClaimSMPPReceipts(ctx context.Context, accountID uuid.UUID, lease time.Duration, limit int) ([]persistence.SMPPReceipt, error)
	SMPPReceiptsDelivered(ctx context.Context, ids []int64) error
	SMPPReceiptRetry(ctx context.Context, id int64, after time.Duration, attempted bool) error
}

// Receipt delivery defaults.
const (
	DefaultReceiptPoll    = time.Second      // how often bound accounts' receipts are looked for
	DefaultReceiptTimeout = 10 * time.Second // the longest a deliver_sm_resp is awaited
	receiptBatch          = 512              // deliver_sm in flight per account
	maxReceiptBackoff     = time.Minute
)

// outbound tracks the server's own requests on a session (deliver_sm, unbind): their sequence
// numbers and the answers awaited.
type outbound struct {
	seq     atomic.Uint32
	mu      sync.Mutex
	closed  bool
	waiting map[uint32]chan smpp.Status
}

func (o *outbound) next() uint32 { return o.seq.Add(1)%0x7FFFFFFF + 1 }

// await registers a request's answer; false once the session has ended.
func (o *outbound) await(seq uint32) (chan smpp.Status, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, false
	}
	if o.waiting == nil {
		o.waiting = map[uint32]chan smpp.Status{}
	}
	ch := make(chan smpp.Status, 1)
	o.waiting[seq] = ch
	return ch, true
}

// answer hands a response to its request's waiter; one to nothing awaited is dropped.
func (o *outbound) answer(seq uint32, st smpp.Status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.waiting[seq]; ok {
		delete(o.waiting, seq)
		ch <- st
	}
}

func (o *outbound) forget(seq uint32) {
	o.mu.Lock()
	delete(o.waiting, seq)
	o.mu.Unlock()
}

// close ends the session's requests: every waiter's channel closes unanswered.
func (o *outbound) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for seq, ch := range o.waiting {
		close(ch)
		delete(o.waiting, seq)
	}
}

// receiving marks the session, its bind_resp sent, as one receipts may go to.
func (ss *session) receiving() {
	if ss.bound != smpp.BindReceiver && ss.bound != smpp.BindTransceiver {
		return
	}
	ss.rx.Store(true)
	select {
	case ss.s.wake <- struct{}{}:
	default:
	}
}

// deliverReceipts runs until Shutdown: each round sends every bound account's due receipts,
// one goroutine an account; an account whose last round is still under way (a slow or silent
// client) is skipped, so it never delays another's.
func (s *Server) deliverReceipts() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		busy = map[uuid.UUID]bool{}          // accounts whose round is under way
		lags = map[uuid.UUID]time.Duration{} // each account's last round's lag
	)
	defer func() { cancel(); wg.Wait() }()
	go func() { <-s.quit; cancel() }()
	tick := time.NewTicker(s.opts.ReceiptPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-tick.C:
		case <-s.wake:
		}
		receivers := s.receivers()
		mu.Lock()
		for acct, ss := range receivers {
			if busy[acct] {
				continue // its last round is still under way: it alone waits for it
			}
			busy[acct] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := s.deliverTo(ctx, acct, ss)
				mu.Lock()
				delete(busy, acct)
				lags[acct] = l
				mu.Unlock()
			}()
		}
		var lag time.Duration
		for acct, l := range lags {
			if _, bound := receivers[acct]; !bound {
				delete(lags, acct)
				continue
			}
			lag = max(lag, l)
		}
		mu.Unlock()
		s.m.lag.Set(lag.Seconds())
	}
}

// receivers is one receiving session per bound account (the longest bound first found).
func (s *Server) receivers() map[uuid.UUID]*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uuid.UUID]*session{}
	for ss := range s.sessions {
		if ss.rx.Load() {
			if _, ok := out[ss.bind.AccountID]; !ok {
				out[ss.bind.AccountID] = ss
			}
		}
	}
	return out
}

// deliverTo sends the account's due receipts on ss until none is left or one is not taken,
// and returns the age of the oldest it took (0: none was due).
func (s *Server) deliverTo(ctx context.Context, acct uuid.UUID, ss *session) (lag time.Duration) {
	lease := s.opts.ReceiptTimeout + 30*time.Second
	for ctx.Err() == nil {
		rs, err := s.deps.Receipts.ClaimSMPPReceipts(ctx, acct, lease, receiptBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("smpp server: claim receipts", "account", acct.String(), "error", err)
			}
			return lag
		}
		if len(rs) == 0 {
			return lag
		}
		lag = max(lag, time.Since(rs[0].DoneAt))
		if !s.sendReceipts(ctx, ss, rs) {
			return lag
		}
	}
	return lag
}

// sendReceipts writes a batch in order and settles each by its answer; false when any was
// not taken (the rest wait for the next round).
func (s *Server) sendReceipts(ctx context.Context, ss *session, rs []persistence.SMPPReceipt) bool {
	type sent struct {
		seq uint32
		ch  chan smpp.Status
	}
	// A row is one deliver_sm, or several for an inbound message's parts: done when all are.
	out := make([][]sent, len(rs))
	for i := range rs {
		for _, p := range rowPDUs(&rs[i], uint16(rs[i].ID)) {
			seq := ss.out.next()
			ch, ok := ss.out.await(seq)
			if ok {
				p.Seq = seq
				if err := ss.c.Send(p); err != nil {
					ss.out.forget(seq)
					ok = false
				}
			}
			if !ok {
				out[i] = append(out[i], sent{})
				break
			}
			out[i] = append(out[i], sent{seq: seq, ch: ch})
		}
	}
	wait, cancel := context.WithTimeout(ctx, s.opts.ReceiptTimeout)
	defer cancel()
	// Settling is not cut short by Shutdown (its writes keep the rows right), only bounded.
	settle, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	all := true
	var done []int64
	for i, parts := range out {
		r := &rs[i]
		st, answered, tried := smpp.StatusOK, true, false
		for _, o := range parts {
			got, ok := smpp.Status(0), false
			if o.ch != nil {
				tried = true
				select {
				case got, ok = <-o.ch:
				case <-wait.Done(): // no answer in time, or Shutdown
					ss.out.forget(o.seq)
				}
			}
			if !ok {
				answered = false
			} else if got != smpp.StatusOK && st == smpp.StatusOK {
				st = got
			}
		}
		outcome := "ok"
		switch {
		case answered && st != smpp.StatusOK:
			outcome = "refused"
		case !answered:
			outcome = "unanswered"
		}
		s.m.deliveries.WithLabelValues(string(r.Kind), outcome).Inc()
		var err error
		switch {
		case answered && st == smpp.StatusOK:
			done = append(done, r.ID) // written together below
		case answered:
			all = false
			err = s.deps.Receipts.SMPPReceiptRetry(settle, r.ID, backoff(r.Attempts), true)
		case tried: // no answer in time: again after a pause, not each round to a client not reading
			all = false
			err = s.deps.Receipts.SMPPReceiptRetry(settle, r.ID, backoff(r.Attempts), true)
		default: // not sent, the bind went away: to be sent again at once
			all = false
			err = s.deps.Receipts.SMPPReceiptRetry(settle, r.ID, 0, false)
		}
		if err != nil {
			s.log.Error("smpp server: settle receipt", "receipt", r.ID, "error", err)
		}
	}
	if err := s.deps.Receipts.SMPPReceiptsDelivered(settle, done); err != nil {
		// Not recorded: they go again when their lease ends (an ESME sees a receipt twice).
		s.log.Error("smpp server: settle receipts", "receipts", len(done), "error", err)
		return false
	}
	return all
}

// backoff is the wait before a receipt an ESME refused is sent again.
func backoff(attempts int) time.Duration {
	return min(time.Duration(attempts+1)*time.Second, maxReceiptBackoff)
}

// rowPDUs are the deliver_sm of an outbox row: a receipt's one, or an inbound message's parts
// (ref ties them).
func rowPDUs(r *persistence.SMPPReceipt, ref uint16) []*smpp.PDU {
	if r.Kind != persistence.SMPPKindInbound {
		return []*smpp.PDU{receiptPDU(0, r)}
	}
	return inboundPDUs(r, ref)
}

// inboundPDUs deliver a message texted to the account's number as a handset's SMSC would: from
// the subscriber to that number, esm_class 0, GSM 03.38 or else UCS-2, a long text in parts tied
// by a UDH. A text longer than a message's most parts goes as several messages.
func inboundPDUs(r *persistence.SMPPReceipt, ref uint16) []*smpp.PDU {
	destTON := byte(1)
	if len(strings.TrimPrefix(r.Recipient, "+")) <= 8 {
		destTON = 3 // a short code
	}
	var out []*smpp.PDU
	for i, chunk := range inboundChunks(r.Text) {
		parts, _, err := smpp.Parts(chunk, ref+uint16(i), smpp.ConcatUDH)
		if err != nil {
			continue // empty: nothing to deliver
		}
		for _, pt := range parts {
			out = append(out, &smpp.PDU{Header: smpp.Header{ID: smpp.DeliverSM}, SourceTON: 1, SourceNPI: 1,
				Source: strings.TrimPrefix(r.Sender, "+"), DestTON: destTON, DestNPI: 1, Dest: strings.TrimPrefix(r.Recipient, "+"),
				ESMClass: pt.ESMClass, DataCoding: pt.DataCoding, ShortMessage: pt.ShortMessage, TLVs: pt.TLVs})
		}
	}
	return out
}

// inboundChunks splits a text too long for one concatenated message into pieces that fit
// (400 characters: 6 UCS-2 parts).
func inboundChunks(text string) []string {
	if _, _, err := smpp.Parts(text, 0, smpp.ConcatUDH); err == nil || text == "" {
		return []string{text}
	}
	rs := []rune(text)
	var out []string
	for len(rs) > 0 {
		n := min(len(rs), 400)
		out = append(out, string(rs[:n]))
		rs = rs[n:]
	}
	return out
}

// receiptPDU is the deliver_sm of a receipt: from the handset to the sender, the receipt text
// of SMPP 3.4 Appendix B, and the receipted_message_id and message_state TLVs.
func receiptPDU(seq uint32, r *persistence.SMPPReceipt) *smpp.PDU {
	rt := smpp.ReceiptText{ID: r.MessageID.String(), Sub: "001", Dlvrd: "001", Submitted: r.SubmittedAt, Done: r.DoneAt,
		State: smpp.StateDelivered, Err: "000", Text: asciiOnly(r.Text)}
	if r.Status != persistence.MessageDelivered {
		rt.Dlvrd, rt.State, rt.Err = "000", smpp.StateUndeliverable, "001"
	}
	p := &smpp.PDU{Header: smpp.Header{ID: smpp.DeliverSM, Seq: seq}, SourceTON: 1, SourceNPI: 1,
		Source: strings.TrimPrefix(r.Recipient, "+"), DestTON: 5, Dest: r.Sender, ESMClass: smpp.ESMClassReceipt,
		ShortMessage: []byte(rt.Format()),
		TLVs:         []smpp.TLV{smpp.StringTLV(smpp.TagReceiptedMessageID, rt.ID), smpp.ByteTLV(smpp.TagMessageState, byte(rt.State))}}
	if isDigits(r.Sender) {
		p.DestTON, p.DestNPI = 1, 1
	}
	return p
}

// asciiOnly keeps the receipt's text readable in the default alphabet it is sent in.
func asciiOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7E {
			return '?'
		}
		return r
	}, s)
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
