package smppserver

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// anyBind binds every system_id with the password "pw".
type anyBind struct{}

// VerifySMPPCredential takes password pw. system_id x binds a new account each time; any
// other names one account, the same on every bind.
func (anyBind) VerifySMPPCredential(_ context.Context, systemID, password string) (persistence.SMPPBind, error) {
	if password != "pw" {
		return persistence.SMPPBind{}, persistence.ErrSMPPBindRefused
	}
	acct := uuid.New()
	if systemID != "x" {
		acct = uuid.NewSHA1(uuid.NameSpaceOID, []byte(systemID))
	}
	return persistence.SMPPBind{CredentialID: uuid.New(), AccountID: acct, MaxBinds: 4}, nil
}

func (anyBind) SMPPBound(context.Context, uuid.UUID) error { return nil }

// echoSender accepts every submit with its text as the message id.
type echoSender struct{}

func (echoSender) Submit(_ context.Context, s Submit) (Accepted, error) {
	return Accepted{MessageID: "m-" + s.To}, nil
}

func (echoSender) SubmitMulti(_ context.Context, m Multi) (MultiAccepted, error) {
	return MultiAccepted{MessageID: "m-" + m.To[0]}, nil
}

func start(t testing.TB, opts Options) *Server { return startWith(t, opts, echoSender{}) }

// startWith starts a server on a free port whose sends go to sender; it shuts down with the test.
func startWith(t testing.TB, opts Options, sender Sender) *Server {
	t.Helper()
	opts.Addr = "127.0.0.1:0"
	s, err := New(opts, Deps{Log: slog.New(slog.DiscardHandler), Binds: anyBind{}, Sender: sender})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

// bound dials s and binds a transceiver of an account of its own.
func bound(t *testing.T, s *Server) net.Conn {
	t.Helper()
	return boundAs(t, s, "x")
}

// boundAs dials s and binds a transceiver as systemID (anyBind).
func boundAs(t *testing.T, s *Server, systemID string) net.Conn {
	t.Helper()
	nc := dial(t, s)
	write(t, nc, &smpp.PDU{Header: smpp.Header{ID: smpp.BindTransceiver, Seq: 1}, SystemID: systemID, Password: "pw"})
	if r := readPDU(t, nc); r == nil || r.Status != smpp.StatusOK {
		t.Fatalf("bind = %+v", r)
	}
	return nc
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc
}

// readPDU reads one PDU, nil at the end of the stream.
func readPDU(t *testing.T, nc net.Conn) *smpp.PDU {
	t.Helper()
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(nc, hdr); err != nil {
		return nil
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr))
	copy(b, hdr)
	if _, err := io.ReadFull(nc, b[4:]); err != nil {
		t.Fatal(err)
	}
	var p smpp.PDU
	if err := smpp.Decode(b, &p); err != nil {
		t.Fatalf("undecodable answer: %v", err)
	}
	return &p
}

func write(t *testing.T, nc net.Conn, p *smpp.PDU) {
	t.Helper()
	b, err := p.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

// A connection that never binds is closed after the bind timeout; one that binds stays.
func TestBindTimeout(t *testing.T) {
	s := start(t, Options{BindTimeout: 200 * time.Millisecond})
	idle, bound := dial(t, s), dial(t, s)
	write(t, bound, &smpp.PDU{Header: smpp.Header{ID: smpp.BindTransceiver, Seq: 1}, SystemID: "x", Password: "pw"})
	if r := readPDU(t, bound); r == nil || r.Status != smpp.StatusOK {
		t.Fatalf("bind = %+v", r)
	}
	if r := readPDU(t, idle); r != nil {
		t.Fatalf("an unbound connection got %s instead of being closed", r.ID)
	}
	write(t, bound, &smpp.PDU{Header: smpp.Header{ID: smpp.EnquireLink, Seq: 2}})
	if r := readPDU(t, bound); r == nil || r.ID != smpp.EnquireLinkResp || r.Seq != 2 {
		t.Fatalf("the bound connection, past the bind timeout: %+v", r)
	}
}

// A command_length that cannot be framed is answered generic_nack ESME_RINVCMDLEN and the
// connection closed; a body that does not decode is nacked with its sequence number and the
// connection goes on.
func TestGarbage(t *testing.T) {
	s := start(t, Options{})
	nc := dial(t, s)
	bad := []byte{0, 0, 0, 16, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 7} // submit_sm with no body
	if _, err := nc.Write(bad); err != nil {
		t.Fatal(err)
	}
	if r := readPDU(t, nc); r == nil || r.ID != smpp.GenericNack || r.Seq != 7 || r.Status != smpp.StatusInvMsgLen {
		t.Fatalf("a truncated submit_sm = %+v; want generic_nack seq 7", r)
	}
	if _, err := nc.Write([]byte{0, 0, 0, 3, 0, 0, 0, 0x15, 0, 0, 0, 0, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if r := readPDU(t, nc); r == nil || r.ID != smpp.GenericNack || r.Status != smpp.StatusInvCmdLen {
		t.Fatalf("command_length 3 = %+v; want generic_nack ESME_RINVCMDLEN", r)
	}
	if r := readPDU(t, nc); r != nil {
		t.Fatalf("after an unframeable PDU the server wrote %s", r.ID)
	}
}

// Whatever octets an ESME sends, the server answers or closes and never stops serving: a
// fresh connection still binds afterwards.
func FuzzSession(f *testing.F) {
	seed := func(p *smpp.PDU) []byte {
		b, err := p.Append(nil)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	bind := seed(&smpp.PDU{Header: smpp.Header{ID: smpp.BindTransceiver, Seq: 1}, SystemID: "x", Password: "pw"})
	f.Add(bind)
	f.Add(append(bind, seed(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: 2}, Dest: "0712345678", ShortMessage: []byte("hi")})...))
	f.Add(append(bind, seed(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: 2}, Dest: "1", ESMClass: smpp.ESMClassUDHI,
		ShortMessage: []byte{5, 0, 3, 1, 2, 1, 'a'}})...))
	sar := func(seq byte) []smpp.TLV {
		return []smpp.TLV{smpp.Uint16TLV(smpp.TagSarMsgRefNum, 7), smpp.ByteTLV(smpp.TagSarTotalSegments, 2),
			smpp.ByteTLV(smpp.TagSarSegmentSeqnum, seq)}
	}
	f.Add(append(append(bind, seed(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: 2}, Dest: "1", DataCoding: smpp.CodingUCS2,
		ShortMessage: []byte{0, 'a'}, TLVs: sar(2)})...), seed(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: 3}, Dest: "1",
		DataCoding: smpp.CodingUCS2, ShortMessage: []byte{0, 'b'}, TLVs: sar(1)})...))
	f.Add(append(bind, seed(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitMulti, Seq: 2}, Dests: []smpp.Dest{
		{Flag: smpp.DestSME, Addr: "0712345678"}, {Flag: smpp.DestList, Addr: "staff"}}, ShortMessage: []byte("hi")})...))
	f.Add(append(bind, seed(&smpp.PDU{Header: smpp.Header{ID: smpp.DataSM, Seq: 2}, Dest: "0712345678",
		TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: []byte("hi")}, smpp.ByteTLV(smpp.TagSarTotalSegments, 3)}})...))
	f.Add(append(bind, seed(&smpp.PDU{Header: smpp.Header{ID: smpp.Unbind, Seq: 3}})...))
	f.Add([]byte{0, 0, 0, 16, 0, 0, 9, 9, 0, 0, 0, 0, 0, 0, 0, 1})
	s := start(f, Options{BindTimeout: time.Second, SubmitTimeout: time.Second})
	f.Fuzz(func(t *testing.T, b []byte) {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(b); err != nil {
			return // closed early: fine
		}
		_ = nc.(*net.TCPConn).CloseWrite()
		for readPDU(t, nc) != nil { // every answer decodes
		}
		check := dial(t, s)
		write(t, check, &smpp.PDU{Header: smpp.Header{ID: smpp.BindTransmitter, Seq: 1}, SystemID: "x", Password: "pw"})
		if r := readPDU(t, check); r == nil || r.Status != smpp.StatusOK {
			t.Fatalf("after %x the server no longer binds: %+v", b, r)
		}
		check.Close()
	})
}

// gateSender holds every submit until its gate opens, telling when one arrives.
type gateSender struct {
	echoSender // for SubmitMulti
	arrived    chan struct{}
	gate       chan struct{}
}

func (g gateSender) Submit(ctx context.Context, s Submit) (Accepted, error) {
	g.arrived <- struct{}{}
	<-g.gate
	return Accepted{MessageID: "held"}, nil
}

// Shutting down answers the submit in flight before it unbinds the ESME, and takes no new
// connection.
func TestShutdownAnswersInFlight(t *testing.T) {
	g := gateSender{arrived: make(chan struct{}, 1), gate: make(chan struct{})}
	s, err := New(Options{Addr: "127.0.0.1:0"}, Deps{Log: slog.New(slog.DiscardHandler), Binds: anyBind{}, Sender: g})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	nc := dial(t, s)
	write(t, nc, &smpp.PDU{Header: smpp.Header{ID: smpp.BindTransceiver, Seq: 1}, SystemID: "x", Password: "pw"})
	if r := readPDU(t, nc); r == nil || r.Status != smpp.StatusOK {
		t.Fatalf("bind = %+v", r)
	}
	write(t, nc, &smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: 2}, Dest: "0712345678", ShortMessage: []byte("hi")})
	<-g.arrived
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for { // the listener closes first
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting while shutting down")
		}
	}
	close(g.gate)
	if r := readPDU(t, nc); r == nil || r.ID != smpp.SubmitSMResp || r.Seq != 2 || r.Status != smpp.StatusOK || r.MessageID != "held" {
		t.Fatalf("the submit in flight at shutdown = %+v; want its resp", r)
	}
	if r := readPDU(t, nc); r == nil || r.ID != smpp.Unbind {
		t.Fatalf("after the last resp = %+v; want unbind", r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
