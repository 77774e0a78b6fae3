package smppserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// session is one ESME's connection: its goroutine reads and answers requests in order; each
// submit_sm runs on a goroutine of its own (at most Options.Window at once), answered when
// its send returns.
type session struct {
	s      *Server
	nc     net.Conn
	c      *smpp.Conn
	peer   netip.Addr
	window chan struct{}
	subs   sync.WaitGroup // submits in flight
	quit   atomic.Bool    // the server is shutting down
	rx     atomic.Bool    // bound as a receiver or transceiver, its bind_resp sent: receipts go here
	out    outbound       // the server's own requests: deliver_sm, unbind

	// Written by the reader alone, read by submits started after the bind.
	bound smpp.CommandID // the bind request that succeeded; 0: not bound
	bind  persistence.SMPPBind
	long  *longMessages // its account's concatenated submits' parts (concat.go)
}

func newSession(s *Server, nc net.Conn) *session {
	peer := netip.Addr{}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		peer = ap.Addr()
	}
	return &session{s: s, nc: nc, c: smpp.NewConn(nc), peer: peer, window: make(chan struct{}, s.opts.Window)}
}

// stop asks the reader to finish: the read in progress fails at once.
func (ss *session) stop() {
	ss.quit.Store(true)
	_ = ss.nc.SetReadDeadline(time.Now())
}

var errBindTimeout = errors.New("smpp server: not bound in time")

func (ss *session) serve() {
	s := ss.s
	defer s.wg.Done()
	defer s.forget(ss)
	boundAt := make(chan struct{})
	timer := time.AfterFunc(s.opts.BindTimeout, func() {
		select {
		case <-boundAt:
		default:
			ss.c.Close(errBindTimeout)
		}
	})
	unbound := ss.read(boundAt)
	timer.Stop()
	ss.rx.Store(false)
	ss.out.close() // receipts awaiting an answer here are sent again
	ss.subs.Wait() // every submit read is answered before the last word
	if ss.bound != 0 {
		s.leaveLong(ss.bind.AccountID)
		if !unbound && ss.quit.Load() {
			_ = ss.c.Send(&smpp.PDU{Header: smpp.Header{ID: smpp.Unbind, Seq: ss.out.next()}})
		}
		s.release(ss.bind.CredentialID)
		s.m.binds.WithLabelValues(bindType(ss.bound)).Dec()
	}
	ss.c.FlushClose()
}

// read answers requests until the connection ends, the ESME unbinds (true) or the server
// stops.
func (ss *session) read(boundAt chan struct{}) (unbound bool) {
	for {
		frame, err := ss.c.Read()
		if err != nil {
			if errors.Is(err, smpp.ErrBadLength) { // the stream cannot be framed any more
				_ = ss.c.Send(&smpp.PDU{Header: smpp.Header{ID: smpp.GenericNack, Status: smpp.StatusInvCmdLen}})
			}
			return false
		}
		var p smpp.PDU
		if err := smpp.Decode(frame, &p); err != nil {
			h, _ := smpp.PeekHeader(frame)
			_ = ss.c.Send(&smpp.PDU{Header: smpp.Header{ID: smpp.GenericNack, Status: smpp.NackStatus(err), Seq: h.Seq}})
			continue
		}
		resp := smpp.PDU{Header: smpp.Header{ID: p.ID.Response(), Seq: p.Seq}}
		switch p.ID {
		case smpp.BindTransmitter, smpp.BindReceiver, smpp.BindTransceiver:
			ss.bindAs(&p, &resp)
			if ss.bound != 0 && resp.Status == smpp.StatusOK {
				close(boundAt)
				_ = ss.c.Send(&resp)
				ss.receiving()
				continue
			}
		case smpp.EnquireLink:
		case smpp.Unbind:
			ss.subs.Wait()
			_ = ss.c.Send(&resp)
			return true
		case smpp.SubmitSM, smpp.SubmitMulti, smpp.DataSM:
			if st := ss.canSubmit(); st != smpp.StatusOK {
				resp.Status = st
				break
			}
			ss.window <- struct{}{}
			ss.subs.Add(1)
			go ss.submit(&p)
			continue
		case smpp.DeliverSMResp:
			ss.out.answer(p.Seq, p.Status)
			continue
		case smpp.GenericNack: // a deliver_sm refused so is sent again
			ss.out.answer(p.Seq, max(p.Status, smpp.StatusInvCmdID))
			continue
		case smpp.EnquireLinkResp, smpp.UnbindResp:
			continue // answers to requests this server does not send yet, or its unbind
		default: // decoded but not served here (query_sm, deliver_sm, responses to nothing)
			resp.ID, resp.Status = smpp.GenericNack, smpp.StatusInvCmdID
		}
		_ = ss.c.Send(&resp)
	}
}

// bindAs checks a bind request and, if it passes, binds the session.
func (ss *session) bindAs(p, resp *smpp.PDU) {
	s := ss.s
	if ss.bound != 0 {
		resp.Status = smpp.StatusAlyBnd
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.SubmitTimeout)
	defer cancel()
	b, err := s.deps.Binds.VerifySMPPCredential(ctx, p.SystemID, p.Password)
	switch {
	case errors.Is(err, persistence.ErrSMPPBindRefused):
		resp.Status = smpp.StatusInvPaswd
	case errors.Is(err, persistence.ErrSMPPCredentialDisabled), errors.Is(err, persistence.ErrSMPPAccountSuspended):
		resp.Status = smpp.StatusBindFail
	case err != nil:
		s.log.Error("smpp server: bind", slog.Any("error", err))
		resp.Status = smpp.StatusSysErr
	case !b.AllowedIPs.Allows(ss.peer):
		resp.Status = smpp.StatusBindFail
	case !s.reserve(b.CredentialID, b.MaxBinds):
		resp.Status = smpp.StatusBindFail
	default:
		ss.bound, ss.bind, ss.long = p.ID, b, s.longFor(b.AccountID)
		resp.SystemID = s.opts.SystemID
		if err := s.deps.Binds.SMPPBound(ctx, b.CredentialID); err != nil { // shown to the tenant; the bind stands
			s.log.Warn("smpp server: record the bind", slog.Any("error", err))
		}
		s.m.bindTries.WithLabelValues(resp.Status.String()).Inc()
		s.m.binds.WithLabelValues(bindType(p.ID)).Inc()
		return
	}
	s.m.bindTries.WithLabelValues(resp.Status.String()).Inc()
	s.log.Info("smpp server: bind refused", slog.String("system_id", p.SystemID),
		slog.String("peer", ss.peer.String()), slog.String("status", resp.Status.String()))
}

// canSubmit says whether the session's bind may submit.
func (ss *session) canSubmit() smpp.Status {
	if ss.bound != smpp.BindTransmitter && ss.bound != smpp.BindTransceiver {
		return smpp.StatusInvBndSts
	}
	return smpp.StatusOK
}
