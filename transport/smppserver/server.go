// Package smppserver is the SMPP 3.4 front door for tenants: an ESME binds with an account's
// SMPP credential (persistence.VerifySMPPCredential) and its submit_sm go through the same
// send as POST /sms/send. The codec and framing are carriers/smpp's; this package owns the
// listener, one goroutine per connection, the bind rules and the command statuses
// (README.md in this folder).
package smppserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// Options shape the server. Zero values take the defaults below.
type Options struct {
	Addr          string        // listen address (port 0 picks one)
	SystemID      string        // the system_id bind responses carry; default "tuma"
	BindTimeout   time.Duration // a connection not bound by then is closed; default 30s
	Window        int           // submit_sm in flight per bind; the reader waits past it; default 64
	SubmitTimeout time.Duration // the longest a submit waits for its send; default 30s
	TPS           int           // submits per second per account, all its binds on this node; 0: no limit

	ReceiptPoll    time.Duration // how often bound accounts' receipts are looked for; default 1s
	ReceiptTimeout time.Duration // the longest a deliver_sm_resp is awaited; default 10s
}

// Defaults of Options.
const (
	DefaultBindTimeout   = 30 * time.Second
	DefaultWindow        = 64
	DefaultSubmitTimeout = 30 * time.Second
)

// Binds checks a bind's credentials (persistence.Store.VerifySMPPCredential with the
// passwords' checker).
type Binds interface {
	VerifySMPPCredential(ctx context.Context, systemID, password string) (persistence.SMPPBind, error)
	// SMPPBound records a credential's successful bind (its last_bound_at).
	SMPPBound(ctx context.Context, credentialID uuid.UUID) error
}

// Submit is one submit_sm, decoded: what a send of one recipient is asked.
type Submit struct {
	AccountID uuid.UUID
	To        string // destination_addr as the ESME wrote it
	From      string // source_addr: an approved sender's name, "" for the account's default
	Text      string
	// MessageID is the id the message takes (a long message's first parts were answered with
	// it); nil: the send makes one.
	MessageID uuid.UUID
	// Receipt is the delivery receipt the ESME asked for (registered_delivery, receiptOf).
	Receipt persistence.ReceiptMode
}

// Accepted is a submit the send took: durable and charged.
type Accepted struct {
	MessageID string // what submit_sm_resp carries
}

// Sender sends a submit exactly as POST /sms/send sends its body. Its errors are the
// engine's (insufficient balance, every recipient suppressed, busy, stopping) or one of the
// Err* below for input the send refused.
type Sender interface {
	Submit(ctx context.Context, s Submit) (Accepted, error)
	// SubmitMulti sends to the destinations it can, refusing the others (MultiAccepted.Refused)
	// with ErrBadDestination when none is left.
	SubmitMulti(ctx context.Context, m Multi) (MultiAccepted, error)
}

// Input a Sender refuses.
var (
	ErrBadDestination = errors.New("smppserver: destination is not a reachable Kenyan mobile number")
	ErrBadSource      = errors.New("smppserver: source is not an approved sender of the account")
	ErrBadText        = errors.New("smppserver: message empty or too long")
)

// Deps are the server's collaborators.
type Deps struct {
	Log    *slog.Logger
	Binds  Binds
	Sender Sender
	// Receipts are the delivery receipts owed (nil: none are delivered).
	Receipts Receipts
	// Registerer takes the server's metrics (nil: not exported).
	Registerer prometheus.Registerer
	// Limiter shares TPS's buckets across nodes (nil: each node keeps its own).
	Limiter Limiter
}

// Server is a listening SMPP server. Start serves; Shutdown stops.
type Server struct {
	opts Options
	deps Deps
	log  *slog.Logger
	m    *metrics
	ln   net.Listener
	wg   sync.WaitGroup // the accept loop and every session
	tps  *throttle

	mu       sync.Mutex
	sessions map[*session]struct{}
	binds    map[uuid.UUID]int // live binds by credential
	long     map[uuid.UUID]*longMessages
	closed   bool

	quit chan struct{} // closed by Shutdown: the receipts' goroutine ends
	wake chan struct{} // a receiver bound: look for its receipts now
}

// New listens on opts.Addr; nothing is accepted before Start.
func New(opts Options, deps Deps) (*Server, error) {
	if opts.SystemID == "" {
		opts.SystemID = "tuma"
	}
	if opts.BindTimeout <= 0 {
		opts.BindTimeout = DefaultBindTimeout
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.SubmitTimeout <= 0 {
		opts.SubmitTimeout = DefaultSubmitTimeout
	}
	if opts.ReceiptPoll <= 0 {
		opts.ReceiptPoll = DefaultReceiptPoll
	}
	if opts.ReceiptTimeout <= 0 {
		opts.ReceiptTimeout = DefaultReceiptTimeout
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("smpp server: listen on %s: %w", opts.Addr, err)
	}
	return &Server{opts: opts, deps: deps, log: deps.Log, ln: ln, m: newMetrics(deps.Registerer), tps: newThrottle(opts.TPS, deps.Limiter), sessions: map[*session]struct{}{},
		binds: map[uuid.UUID]int{}, long: map[uuid.UUID]*longMessages{}, quit: make(chan struct{}), wake: make(chan struct{}, 1)}, nil
}

// Addr is where the server listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Start accepts connections, and delivers receipts, on goroutines the server owns until
// Shutdown.
func (s *Server) Start() {
	s.wg.Add(1)
	go s.accept()
	if s.deps.Receipts != nil {
		s.wg.Add(1)
		go s.deliverReceipts()
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("smpp server: accept", slog.Any("error", err))
			time.Sleep(100 * time.Millisecond) // out of descriptors: do not spin
			continue
		}
		ss := newSession(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.sessions[ss] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go ss.serve()
	}
}

// Shutdown stops accepting, stops reading requests, answers the submits in flight, sends
// each bound ESME unbind and closes; connections still open when ctx ends are dropped.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		close(s.quit)
	}
	s.closed = true
	_ = s.ln.Close()
	all := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.stop()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for ss := range s.sessions {
			ss.c.Close(errors.New("smpp server: shutdown timed out"))
		}
		s.mu.Unlock()
		<-done
		return fmt.Errorf("smpp server: shutdown: %w", ctx.Err())
	}
}

// reserve counts a bind of credential id, refusing one past max.
func (s *Server) reserve(id uuid.UUID, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max > 0 && s.binds[id] >= max {
		return false
	}
	s.binds[id]++
	return true
}

func (s *Server) release(id uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.binds[id]--; s.binds[id] <= 0 {
		delete(s.binds, id)
	}
}

func (s *Server) forget(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
}
