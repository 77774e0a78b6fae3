package smpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SMSCConfig is a simulated SMSC (tuma smsc): it binds ESMEs, answers submit_sm and sends
// delivery receipts after a delay with an outcome mix, and throttles above a TPS cap.
type SMSCConfig struct {
	Addr         string // listen address, e.g. 127.0.0.1:2775 (port 0 picks one)
	SystemID     string // the only system_id accepted; empty accepts any
	Password     string
	TPS          int           // submit_sm per second over all binds; above it ESME_RTHROTTLED; 0 = no cap
	ReceiptDelay time.Duration // submit to receipt
	FailRate     float64       // share of messages that end UNDELIV
	RejectPrefix string        // destinations starting with it are refused (ESME_RINVDSTADR)
	IDForm       MessageIDForm // how receipt texts write the resp's id (IDSame: as is)
	ReceiptTLVs  bool          // add receipted_message_id and message_state to receipts
	// ReceiptsFirst writes each receipt before its submit_sm_resp, a race real SMSCs show.
	ReceiptsFirst bool
	// SlowPrefix delays the submit_sm_resp of destinations starting with it by SlowDelay
	// (an SMSC answering after the client's response timeout).
	SlowPrefix string
	SlowDelay  time.Duration
}

// SMSCStats counts what an SMSC did.
type SMSCStats struct {
	Binds, Submits, Throttled, Rejected, Receipts, Undelivered, Queries uint64
	Sessions                                                            int
}

// SMSC is a running simulated SMSC.
type SMSC struct {
	cfg SMSCConfig
	log *slog.Logger
	ln  net.Listener
	ids atomic.Uint64

	second  atomic.Int64 // the unix second being counted for the TPS cap
	inSec   atomic.Int64
	binds   atomic.Uint64
	submits atomic.Uint64
	thr     atomic.Uint64
	rej     atomic.Uint64
	rcpts   atomic.Uint64
	undeliv atomic.Uint64
	queries atomic.Uint64

	// Accepted submits per unix second, so a load test can check a TPS cap second by second.
	// Its own lock: taken once per accepted submit, it must not wait on query_sm's maps.
	secMu sync.Mutex
	secs  [secondsKept]SecondCount // slot sec%secondsKept; a stale Second marks a slot as free

	mu      sync.Mutex
	conns   map[*smscConn]struct{}
	states  map[string]byte // message id → message_state, for query_sm
	older   map[string]byte // the generation before: query_sm remembers 1 to 2 million ids
	wg      sync.WaitGroup
	closed  bool
	orphans []receiptDue // receipts of dropped sessions, for the next bind (as SMSCs keep them)
}

// NewSMSC listens; Serve accepts.
func NewSMSC(cfg SMSCConfig, log *slog.Logger) (*SMSC, error) {
	if cfg.FailRate < 0 || cfg.FailRate > 1 || cfg.TPS < 0 || cfg.ReceiptDelay < 0 {
		return nil, errors.New("smsc: fail rate must be 0 to 1, TPS and receipt delay not negative")
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("smsc: %w", err)
	}
	s := &SMSC{cfg: cfg, log: log, ln: ln, conns: map[*smscConn]struct{}{}, states: map[string]byte{}}
	s.ids.Store(0x10000000 + rand.Uint64N(0x1000000))
	return s, nil
}

// Addr is where the SMSC listens.
func (s *SMSC) Addr() string { return s.ln.Addr().String() }

// Serve accepts connections until ctx ends or Close.
func (s *SMSC) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("smsc: accept: %w", err)
		}
		c := &smscConn{s: s, w: newWire(nc, nil), kick: make(chan struct{}, 1), quit: make(chan struct{}), unacked: map[uint32]receiptDue{}}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go c.read()
		go c.pump()
	}
}

// Close stops accepting and drops every connection.
func (s *SMSC) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	_ = s.ln.Close()
	s.mu.Unlock()
	s.Drop()
	s.wg.Wait()
}

// Drop closes every connection abruptly, without unbind (a lost link, for tests and demos).
func (s *SMSC) Drop() int {
	s.mu.Lock()
	cs := make([]*smscConn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.stop(errors.New("smsc: dropped"))
	}
	return len(cs)
}

// Stats reads the counters.
func (s *SMSC) Stats() SMSCStats {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	return SMSCStats{Binds: s.binds.Load(), Submits: s.submits.Load(), Throttled: s.thr.Load(),
		Rejected: s.rej.Load(), Receipts: s.rcpts.Load(), Undelivered: s.undeliv.Load(),
		Queries: s.queries.Load(), Sessions: n}
}

// admit counts a submit against the cap of second now.
func (s *SMSC) admit(now int64) bool {
	if s.cfg.TPS == 0 {
		return true
	}
	if sec := s.second.Load(); sec != now && s.second.CompareAndSwap(sec, now) {
		s.inSec.Store(0)
	}
	return s.inSec.Add(1) <= int64(s.cfg.TPS)
}

// secondsKept is how far back Seconds sees: an hour, in a fixed ring.
const secondsKept = 3600

// SecondCount is how many submit_sm an SMSC accepted (ESME_ROK) in one unix second.
type SecondCount struct {
	Second  int64 // unix
	Submits int
}

// countSecond counts an accepted submit in second sec.
func (s *SMSC) countSecond(sec int64) {
	s.secMu.Lock()
	c := &s.secs[sec%secondsKept]
	switch {
	case c.Second == sec:
		c.Submits++
	case c.Second < sec: // the slot's second is an hour gone
		*c = SecondCount{Second: sec, Submits: 1}
	} // else counted by a submit that stalled past the ring: too old to keep
	s.secMu.Unlock()
}

// Seconds lists the seconds with accepted submits of the last hour, oldest first, from the
// second holding since.
func (s *SMSC) Seconds(since time.Time) []SecondCount {
	now := time.Now().Unix()
	from := max(since.Unix(), now-secondsKept+1)
	var out []SecondCount
	s.secMu.Lock()
	defer s.secMu.Unlock()
	for sec := from; sec <= now; sec++ {
		if c := s.secs[sec%secondsKept]; c.Second == sec && c.Submits > 0 {
			out = append(out, c)
		}
	}
	return out
}

// smscConn is one ESME's connection.
type smscConn struct {
	s     *SMSC
	w     *wire
	bound atomic.Bool
	rx    atomic.Bool   // bound as a receiver or transceiver: MO may be delivered to it
	seq   atomic.Uint32 // deliver_sm sequence numbers
	once  sync.Once
	quit  chan struct{}

	mu      sync.Mutex
	queue   []receiptDue           // due in order: the delay is the same for all
	unacked map[uint32]receiptDue  // sent, awaiting deliver_sm_resp (by sequence number)
	moWait  map[uint32]chan Status // MO parts sent, awaiting deliver_sm_resp
	closed  bool
	kick    chan struct{}
}

type receiptDue struct {
	at       time.Time
	id       string
	src, dst string
	text     string
	state    byte
	submitAt time.Time
}

func (c *smscConn) stop(err error) {
	c.once.Do(func() {
		c.w.close(err)
		close(c.quit)
		// Receipts due and receipts sent but not acknowledged wait for the next bind: an
		// SMSC delivers a receipt until the ESME answers it, as node-smpp's and real ones do.
		c.mu.Lock()
		left := c.queue
		for _, r := range c.unacked {
			left = append(left, r)
		}
		c.queue, c.unacked, c.closed = nil, nil, true
		c.mu.Unlock()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.orphans = append(c.s.orphans, left...)
		c.s.mu.Unlock()
	})
}

// adopt takes the receipts of sessions that went away.
func (c *smscConn) adopt() {
	c.s.mu.Lock()
	left := c.s.orphans
	c.s.orphans = nil
	c.s.mu.Unlock()
	if len(left) == 0 {
		return
	}
	c.mu.Lock()
	c.queue = append(left, c.queue...)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *smscConn) read() {
	defer c.s.wg.Done()
	for {
		frame, err := c.w.read()
		if err != nil {
			c.stop(err)
			return
		}
		var p PDU
		if err := Decode(frame, &p); err != nil {
			h, _ := PeekHeader(frame)
			_ = c.w.send(&PDU{Header: Header{ID: GenericNack, Status: nackStatus(err), Seq: h.Seq}})
			if errors.Is(err, ErrBadLength) {
				c.stop(err)
				return
			}
			continue
		}
		if done := c.handle(&p); done {
			return
		}
	}
}

// handle answers one request; it reports whether the connection is finished.
func (c *smscConn) handle(p *PDU) bool {
	s := c.s
	resp := PDU{Header: Header{ID: p.ID.Response(), Seq: p.Seq}}
	switch p.ID {
	case BindTransceiver, BindTransmitter, BindReceiver:
		switch {
		case c.bound.Load():
			resp.Status = StatusAlyBnd
		case s.cfg.SystemID != "" && p.SystemID != s.cfg.SystemID:
			resp.Status = StatusInvSysID
		case s.cfg.SystemID != "" && p.Password != s.cfg.Password:
			resp.Status = StatusInvPaswd
		default:
			c.bound.Store(true)
			s.binds.Add(1)
			resp.SystemID = "tumasmsc"
			if p.ID != BindTransmitter {
				c.rx.Store(true)
				defer c.adopt()
			}
		}
	case EnquireLink:
	case Unbind:
		_ = c.w.send(&resp)
		c.w.flushClose()
		c.stop(errors.New("smsc: unbound"))
		return true
	case SubmitSM:
		c.submit(p, &resp)
		if s.cfg.SlowPrefix != "" && strings.HasPrefix(p.Dest, s.cfg.SlowPrefix) {
			time.AfterFunc(s.cfg.SlowDelay, func() { _ = c.w.send(&resp) })
			return false
		}
	case QuerySM:
		s.queries.Add(1)
		s.mu.Lock()
		st, ok := s.states[p.MessageID]
		if !ok {
			st, ok = s.older[p.MessageID]
		}
		s.mu.Unlock()
		if !ok || !c.bound.Load() {
			resp.Status = StatusQueryFail
			break
		}
		resp.MessageID, resp.MessageState = p.MessageID, st
	case DeliverSMResp:
		if c.moAnswered(p) {
			return false
		}
		c.mu.Lock()
		r, ok := c.unacked[p.Seq]
		delete(c.unacked, p.Seq)
		if ok && p.Status != StatusOK { // refused for now: deliver it again later
			r.at = time.Now().Add(s.cfg.ReceiptDelay)
			c.queue = append(c.queue, r)
		}
		c.mu.Unlock()
		if ok && p.Status == StatusOK {
			s.rcpts.Add(1)
		}
		return false
	case EnquireLinkResp, GenericNack:
		return false
	default:
		resp.ID, resp.Status = GenericNack, StatusInvCmdID
	}
	_ = c.w.send(&resp)
	return false
}

func (c *smscConn) submit(p, resp *PDU) {
	s := c.s
	sec := time.Now().Unix() // the cap's second and the count's are one: a drill compares them
	switch {
	case !c.bound.Load():
		resp.Status = StatusInvBndSts
		return
	case !s.admit(sec):
		s.thr.Add(1)
		resp.Status = StatusThrottled
		return
	case s.cfg.RejectPrefix != "" && len(p.Dest) >= len(s.cfg.RejectPrefix) && p.Dest[:len(s.cfg.RejectPrefix)] == s.cfg.RejectPrefix:
		s.rej.Add(1)
		resp.Status = StatusInvDstAdr
		return
	}
	s.submits.Add(1)
	s.countSecond(sec)
	n := s.ids.Add(1)
	if s.cfg.IDForm == IDDecInRespHexInReceipt {
		resp.MessageID = strconv.FormatUint(n, 10)
	} else {
		resp.MessageID = strconv.FormatUint(n, 16)
	}
	state := StateEnroute
	final := StateDelivered
	if s.cfg.FailRate > 0 && rand.Float64() < s.cfg.FailRate {
		final = StateUndeliverable
	}
	s.setState(resp.MessageID, state)
	if p.RegisteredDelivery&0x03 == 0 {
		s.setState(resp.MessageID, final)
		return
	}
	seg, _ := ReadSegment(p)
	text, _ := DecodeText(p.DataCoding, seg.Body)
	now := time.Now()
	r := receiptDue{at: now.Add(s.cfg.ReceiptDelay), id: resp.MessageID, src: p.Dest,
		dst: p.Source, text: text, state: byte(final), submitAt: now}
	if s.cfg.ReceiptsFirst {
		c.sendReceipt(&r)
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// setState remembers a message's state for query_sm, in two generations of a million.
func (s *SMSC) setState(id string, st MessageState) {
	s.mu.Lock()
	if _, ok := s.states[id]; !ok && len(s.states) >= 1_000_000 {
		s.older, s.states = s.states, make(map[string]byte, 1024)
	}
	s.states[id] = byte(st)
	s.mu.Unlock()
}

// pump sends receipts as they fall due, in batches.
func (c *smscConn) pump() {
	defer c.s.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		c.mu.Lock()
		now := time.Now()
		k := 0
		for k < len(c.queue) && !c.queue[k].at.After(now) {
			k++
		}
		due := append([]receiptDue(nil), c.queue[:k]...)
		c.queue = c.queue[k:]
		var wait time.Duration = time.Hour
		if len(c.queue) > 0 {
			wait = time.Until(c.queue[0].at)
		}
		c.mu.Unlock()
		for i := range due {
			c.sendReceipt(&due[i])
		}
		t.Reset(wait)
		select {
		case <-c.quit:
			return
		case <-c.kick:
		case <-t.C:
		}
	}
}

func (c *smscConn) sendReceipt(r *receiptDue) {
	s := c.s
	st := MessageState(r.state)
	s.setState(r.id, st)
	id := r.id
	switch s.cfg.IDForm {
	case IDHexInRespDecInReceipt:
		if n, err := strconv.ParseUint(r.id, 16, 64); err == nil {
			id = fmt.Sprintf("%010d", n)
		}
	case IDDecInRespHexInReceipt:
		if n, err := strconv.ParseUint(r.id, 10, 64); err == nil {
			id = fmt.Sprintf("%X", n)
		}
	}
	errCode := "000"
	if st != StateDelivered {
		errCode = "001"
		s.undeliv.Add(1)
	}
	text := []rune(r.text)
	if len(text) > 20 {
		text = text[:20]
	}
	body := fmt.Sprintf("id:%s sub:001 dlvrd:%s submit date:%s done date:%s stat:%s err:%s text:%s", id,
		map[bool]string{true: "001", false: "000"}[st == StateDelivered], r.submitAt.UTC().Format("0601021504"),
		time.Now().UTC().Format("0601021504"), st, errCode, gsmSafe(string(text)))
	seq := c.seq.Add(1)%0x7FFFFFFF + 1
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.mu.Lock()
		s.orphans = append(s.orphans, *r)
		s.mu.Unlock()
		return
	}
	c.unacked[seq] = *r
	c.mu.Unlock()
	p := PDU{Header: Header{ID: DeliverSM, Seq: seq}, SourceTON: 1, SourceNPI: 1, Source: r.src, DestTON: 5, Dest: r.dst,
		ESMClass: ESMClassReceipt, ShortMessage: []byte(body)}
	if s.cfg.ReceiptTLVs {
		p.TLVs = []TLV{StringTLV(TagReceiptedMessageID, r.id), ByteTLV(TagMessageState, r.state)}
	}
	if len(p.Source) >= maxAddr {
		p.Source = p.Source[:maxAddr-1]
	}
	if len(p.Dest) >= maxAddr {
		p.Dest = p.Dest[:maxAddr-1]
	}
	if c.w.send(&p) == nil {
		return
	}
	// Not sent: for the next bind, unless the connection's stop has taken it already.
	c.mu.Lock()
	_, held := c.unacked[seq]
	delete(c.unacked, seq)
	c.mu.Unlock()
	if held {
		s.mu.Lock()
		s.orphans = append(s.orphans, *r)
		s.mu.Unlock()
	}
}

// gsmSafe keeps a receipt's text excerpt to plain ASCII, as SMSCs do.
func gsmSafe(s string) string {
	b := []byte(s)
	out := b[:0]
	for _, ch := range []rune(s) {
		if ch >= 0x20 && ch < 0x7f {
			out = append(out, byte(ch))
		} else {
			out = append(out, '?')
		}
	}
	return string(out)
}
