package smpp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// moRecorder is an MO handler that fails its first fail calls, as a database that is down.
type moRecorder struct {
	mu    sync.Mutex
	fail  int
	calls int
	got   []MO
}

func (r *moRecorder) handle(_ context.Context, m MO) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.fail > 0 {
		r.fail--
		return errors.New("database down")
	}
	r.got = append(r.got, m)
	return nil
}

func (r *moRecorder) messages() []MO {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]MO(nil), r.got...)
}

func sendMO(t *testing.T, s *SMSC, m MOSpec) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := s.SendMO(ctx, m)
	if err != nil {
		t.Fatalf("SendMO(%q) after %d parts: %v", m.Text, n, err)
	}
	return n
}

// A long UCS-2 message from the SMSC reaches the handler whole, in each concatenation form;
// a handler that fails is answered ESME_RX_T_APPN and the SMSC's resend gets through.
func TestBindMOReachesHandler(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{SystemID: "tuma", Password: "secret"})
	rec := &moRecorder{fail: 1}
	var receipts int
	var mu sync.Mutex
	b := testBind(t, smsc.Addr(), nil, BindHooks{MO: rec.handle, Deliver: func(p *PDU) Status {
		mu.Lock()
		receipts++
		mu.Unlock()
		return StatusOK
	}})
	waitBound(t, b)
	long := strings.Repeat("Asante sana 😀 ", 12) // UCS-2: 3 parts
	cases := []MOSpec{
		{From: "254712345678", To: "22384", Text: "STOP"},
		{From: "254712345678", To: "22384", Text: long},
		{From: "254712345679", To: "22384", Text: long, Ref16: true},
		{From: "254712345670", To: "254722000000", Text: long, Concat: ConcatSAR},
	}
	for _, c := range cases {
		if n, want := sendMO(t, smsc, c), map[bool]int{true: 1, false: 3}[c.Text == "STOP"]; n != want {
			t.Fatalf("%q went in %d parts; want %d", c.Text[:4], n, want)
		}
	}
	got := rec.messages()
	rec.mu.Lock()
	calls := rec.calls
	rec.mu.Unlock()
	if len(got) != len(cases) || calls != len(cases)+1 {
		t.Fatalf("handler took %d messages in %d calls; want %d after one failure", len(got), calls, len(cases))
	}
	for i, c := range cases {
		if got[i].Text != c.Text || got[i].Source != c.From || got[i].Dest != c.To || got[i].Incomplete {
			t.Errorf("message %d = %+v; want %q from %s to %s", i, got[i], c.Text, c.From, c.To)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if receipts != 0 {
		t.Errorf("%d MO went to the receipt hook", receipts)
	}
}

// The handler runs off the reader: while it is stuck (a slow database) submits on the same
// bind still get their resps, and receipts still reach Deliver.
func TestBindMOHandlerDoesNotBlockReader(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{SystemID: "tuma", Password: "secret", ReceiptTLVs: true})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	receipts := make(chan string, 10)
	b := testBind(t, smsc.Addr(), func(c *BindConfig) { c.ResponseTimeout = 5 * time.Second }, BindHooks{
		MO: func(ctx context.Context, m MO) error {
			entered <- struct{}{}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		Deliver: func(p *PDU) Status {
			id, _ := p.TLVString(TagReceiptedMessageID)
			receipts <- id
			return StatusOK
		},
	})
	waitBound(t, b)
	moDone := make(chan error, 1)
	go func() { // owned: the test waits for it below
		_, err := smsc.SendMO(context.Background(), MOSpec{From: "254712345678", To: "22384", Text: "hi"})
		moDone <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := b.Submit(ctx, submitPDU("254712000001", "while the MO waits"))
	if err != nil {
		t.Fatalf("submit while the MO handler is stuck: %v", err)
	}
	select {
	case id := <-receipts:
		if id != resp.MessageID {
			t.Errorf("receipt for %q; want %q", id, resp.MessageID)
		}
	case <-ctx.Done():
		t.Fatal("no receipt while the MO handler is stuck")
	}
	close(release)
	if err := <-moDone; err != nil {
		t.Fatalf("SendMO: %v", err)
	}
}

// A message the handler can never take is refused for good (ESME_RX_P_APPN), not offered again.
func TestBindMORefused(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{SystemID: "tuma", Password: "secret"})
	var calls atomic.Int32
	b := testBind(t, smsc.Addr(), nil, BindHooks{MO: func(context.Context, MO) error {
		calls.Add(1)
		return ErrMORefused
	}})
	waitBound(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := smsc.SendMO(ctx, MOSpec{From: "alpha", To: "22384", Text: "x"})
	if !errors.Is(err, StatusXPAppn) || calls.Load() != 1 {
		t.Fatalf("SendMO = %v after %d calls; want ESME_RX_P_APPN after one", err, calls.Load())
	}
}

// A message whose parts stopped coming is handed on by the worker once its wait is over, with
// the parts it has; a failed hand-on is tried again at the next tick, not dropped.
func TestBindMOHandsOnExpired(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{SystemID: "tuma", Password: "secret"})
	r := NewReassembler(30*time.Millisecond, 0)
	rec := &moRecorder{fail: 1}
	testBind(t, smsc.Addr(), nil, BindHooks{MO: rec.handle, Reassembler: r})
	if a, err := r.Add(moPDU(ESMClassUDHI, 0, udh8(5, 2, 1, []byte("half"))), time.Now()); a != nil || err != nil {
		t.Fatalf("part 1 of 2: %v %v", a, err)
	}
	poll(t, "the incomplete message handed on", func() bool { return len(rec.messages()) == 1 })
	m := rec.messages()[0]
	rec.mu.Lock()
	calls := rec.calls
	rec.mu.Unlock()
	if m.Text != "half" || !m.Incomplete || m.Parts != 1 || m.Total != 2 || calls != 2 || r.Held() != 0 {
		t.Fatalf("handed on %+v after %d calls, %d held; want part 1 of 2 after one failure", m, calls, r.Held())
	}
}
