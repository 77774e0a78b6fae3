// The simulated SMSC's mobile-originated messages: a subscriber's text delivered to a bound
// ESME as deliver_sm (esm_class type 0), split into parts when long.

package smpp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MOSpec is a message a subscriber sends through the SMSC (SMSC.SendMO).
type MOSpec struct {
	From string // the subscriber, e.g. 254712345678
	To   string // the short code or long number written to
	Text string // split and coded as a phone would: GSM 03.38, else UCS-2
	// Concat ties a long text's parts: UDH with an 8-bit reference, or the SAR TLVs; Ref16
	// makes the UDH's reference 16-bit (IE 0x08).
	Concat Concat
	Ref16  bool
}

// Pauses of SendMO: an ESME that refuses a part for now (ESME_RX_T_APPN) or does not answer
// is offered it again, as SMSCs do, after moRetryPause (short: it is a simulator for tests and
// demos) or once moRespWait has passed without an answer.
const (
	moRetryPause = 50 * time.Millisecond
	moRespWait   = 10 * time.Second
)

// ErrNoReceiver is SendMO with no ESME bound to receive.
var ErrNoReceiver = errors.New("smsc: no receiver or transceiver bound")

// SendMO delivers a mobile-originated message to a bound receiver or transceiver, part by part,
// each until it is answered ESME_ROK: a part refused for now, or one whose connection drops, is
// offered again. It returns the parts delivered; a permanent refusal is its Status; a ctx that
// ends first, ctx's error.
func (s *SMSC) SendMO(ctx context.Context, m MOSpec) (int, error) {
	ref := uint16(s.ids.Add(1))
	parts, _, err := Parts(m.Text, ref, m.Concat)
	if err != nil {
		return 0, fmt.Errorf("smsc: mo: %w", err)
	}
	for i := range parts {
		if m.Ref16 && parts[i].ESMClass&ESMClassUDHI != 0 {
			h := parts[i].ShortMessage // 05 00 03 ref total seq
			parts[i].ShortMessage = append([]byte{6, 8, 4, byte(ref >> 8), byte(ref), h[4], h[5]}, h[6:]...)
		}
	}
	destTON := byte(1)
	if len(m.To) <= 8 {
		destTON = 3 // a short code: network specific
	}
	for i, pt := range parts {
		p := PDU{Header: Header{ID: DeliverSM}, SourceTON: 1, SourceNPI: 1, Source: m.From, DestTON: destTON,
			Dest: m.To, ESMClass: pt.ESMClass, DataCoding: pt.DataCoding, ShortMessage: pt.ShortMessage, TLVs: pt.TLVs}
		if err := s.deliverPart(ctx, &p); err != nil {
			return i, err
		}
	}
	return len(parts), nil
}

// deliverPart offers one part until it is taken.
func (s *SMSC) deliverPart(ctx context.Context, p *PDU) error {
	for {
		c := s.receiver()
		var st Status = StatusXTAppn
		if c != nil {
			var err error
			st, err = c.sendMO(ctx, p)
			if err != nil && ctx.Err() != nil {
				return err
			}
		}
		switch {
		case c != nil && st == StatusOK:
			return nil
		case c != nil && st != StatusXTAppn && Classify(st) == ClassPermanent:
			return st
		}
		t := time.NewTimer(moRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			if c == nil {
				return fmt.Errorf("%w: %w", ErrNoReceiver, ctx.Err())
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// receiver is a connection bound to receive, or nil.
func (s *SMSC) receiver() *smscConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.rx.Load() {
			return c
		}
	}
	return nil
}

// sendMO writes one part and waits for its answer; a connection that ends, or no answer in
// moRespWait, is ESME_RX_T_APPN (offered again).
func (c *smscConn) sendMO(ctx context.Context, p *PDU) (Status, error) {
	p.Seq = c.seq.Add(1)%0x7FFFFFFF + 1
	ch := make(chan Status, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return StatusXTAppn, nil
	}
	if c.moWait == nil {
		c.moWait = map[uint32]chan Status{}
	}
	c.moWait[p.Seq] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.moWait, p.Seq)
		c.mu.Unlock()
	}()
	if err := c.w.send(p); err != nil {
		return StatusXTAppn, nil
	}
	t := time.NewTimer(moRespWait)
	defer t.Stop()
	select {
	case st := <-ch:
		return st, nil
	case <-c.quit:
		return StatusXTAppn, nil
	case <-t.C:
		return StatusXTAppn, nil
	case <-ctx.Done():
		return StatusXTAppn, ctx.Err()
	}
}

// moAnswered takes a deliver_sm_resp for an MO part, reporting whether it was one.
func (c *smscConn) moAnswered(p *PDU) bool {
	c.mu.Lock()
	ch, ok := c.moWait[p.Seq]
	delete(c.moWait, p.Seq)
	c.mu.Unlock()
	if ok {
		ch <- p.Status
	}
	return ok
}
