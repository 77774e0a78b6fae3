package smpp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startSMSC(t testing.TB, cfg SMSCConfig) *SMSC {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s, err := NewSMSC(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(context.Background()) }()
	t.Cleanup(s.Close)
	return s
}

func testBind(t testing.TB, addr string, mod func(*BindConfig), hooks BindHooks) *Bind {
	t.Helper()
	cfg := BindConfig{Name: "test-1", Addr: addr, SystemID: "tuma", Password: "secret", Window: 100,
		EnquireLink: time.Second, ResponseTimeout: 2 * time.Second, ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 100 * time.Millisecond, ThrottlePause: 20 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	b, err := NewBind(cfg, hooks, quiet(), NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func waitBound(t testing.TB, b *Bind) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.WaitBound(ctx); err != nil {
		t.Fatalf("never bound: %v", err)
	}
}

// poll waits for cond with a deadline instead of sleeping a guess.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func submitPDU(dest, text string) *PDU {
	return &PDU{SourceTON: 5, Source: "TUMA", DestTON: 1, DestNPI: 1, Dest: dest, RegisteredDelivery: 1,
		ShortMessage: []byte(text)}
}

func TestBindSubmitsAndGetsReceipts(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{SystemID: "tuma", Password: "secret", ReceiptDelay: 10 * time.Millisecond,
		RejectPrefix: "25400", ReceiptTLVs: true})
	var mu sync.Mutex
	receipts := map[string]MessageState{}
	b := testBind(t, smsc.Addr(), nil, BindHooks{Deliver: func(p *PDU) Status {
		id, _ := p.TLVString(TagReceiptedMessageID)
		st, _ := p.TLVUint(TagMessageState)
		mu.Lock()
		receipts[id] = MessageState(st)
		mu.Unlock()
		return StatusOK
	}})
	waitBound(t, b)
	var ids []string
	for range 50 {
		resp, err := b.Submit(context.Background(), submitPDU("254712345678", "hello"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.MessageID)
	}
	poll(t, "50 receipts", func() bool { mu.Lock(); defer mu.Unlock(); return len(receipts) == 50 })
	for _, id := range ids {
		if receipts[id] != StateDelivered {
			t.Fatalf("receipt for %s: %v", id, receipts[id])
		}
	}
	q, err := b.Query(context.Background(), ids[0], "TUMA", 5, 0)
	if err != nil || MessageState(q.MessageState) != StateDelivered {
		t.Fatalf("query_sm: %+v %v", q, err)
	}
	if _, err := b.Query(context.Background(), "nope", "TUMA", 5, 0); !errors.Is(err, StatusQueryFail) {
		t.Fatalf("query_sm of an unknown id: %v", err)
	}
	_, err = b.Submit(context.Background(), submitPDU("254001234567", "hello"))
	if st := Status(0); !errors.As(err, &st) || Classify(st) != ClassPermanent {
		t.Fatalf("refused destination: %v", err)
	}
}

func TestBindRefusedBacksOff(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{SystemID: "tuma", Password: "secret"})
	b := testBind(t, smsc.Addr(), func(c *BindConfig) { c.Password = "wrong" }, BindHooks{})
	poll(t, "three refused binds", func() bool { return smsc.Stats().Sessions == 0 && reconnects(b) >= 3 })
	if b.Bound() {
		t.Fatal("bound with a wrong password")
	}
	if _, err := b.Submit(context.Background(), submitPDU("254712345678", "x")); !errors.Is(err, ErrNotBound) {
		t.Fatalf("submit unbound: %v", err)
	}
}

func reconnects(b *Bind) int {
	return int(counterValue(b.m.reconnects))
}

func TestBindThrottledHoldsAndRecovers(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{TPS: 100})
	b := testBind(t, smsc.Addr(), nil, BindHooks{})
	waitBound(t, b)
	var ok, throttled atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ok.Load() < 300 {
				_, err := b.Submit(context.Background(), submitPDU("254712345678", "x"))
				var st Status
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &st) && Classify(st) == ClassThrottle:
					throttled.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if throttled.Load() == 0 || counterValue(b.m.throttles) == 0 {
		t.Fatal("never throttled above the SMSC's cap")
	}
	// Holding after each throttle keeps the refusals to a fraction of what was sent.
	if throttled.Load() > 4*ok.Load() {
		t.Fatalf("%d throttled for %d accepted: the bind did not hold", throttled.Load(), ok.Load())
	}
}

func TestBindTPSCapSpacesSubmits(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{TPS: 50})
	b := testBind(t, smsc.Addr(), func(c *BindConfig) { c.TPS = 40 }, BindHooks{})
	waitBound(t, b)
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 6 {
				if _, err := b.Submit(context.Background(), submitPDU("254712345678", "x")); err != nil {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if refused.Load() != 0 || smsc.Stats().Throttled != 0 {
		t.Fatalf("a bind capped under the SMSC's rate was refused %d times", refused.Load())
	}
}

func TestBindRebindsAfterADrop(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{})
	b := testBind(t, smsc.Addr(), nil, BindHooks{})
	waitBound(t, b)
	if n := smsc.Drop(); n != 1 {
		t.Fatalf("dropped %d sessions", n)
	}
	poll(t, "a second bind", func() bool { return smsc.Stats().Binds == 2 && b.Bound() })
	if _, err := b.Submit(context.Background(), submitPDU("254712345678", "x")); err != nil {
		t.Fatal(err)
	}
}

func TestBindRestartsWholeAfterAPanic(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{ReceiptDelay: time.Millisecond})
	var panicked atomic.Bool
	var after atomic.Int64
	b := testBind(t, smsc.Addr(), nil, BindHooks{Deliver: func(p *PDU) Status {
		if panicked.CompareAndSwap(false, true) {
			panic("a receipt hook's bug")
		}
		after.Add(1)
		return StatusOK
	}})
	waitBound(t, b)
	if _, err := b.Submit(context.Background(), submitPDU("254712345678", "x")); err != nil {
		t.Fatal(err)
	}
	poll(t, "a rebind after the panic", func() bool { return panicked.Load() && smsc.Stats().Binds == 2 && b.Bound() })
	if _, err := b.Submit(context.Background(), submitPDU("254712345678", "y")); err != nil {
		t.Fatal(err)
	}
	poll(t, "a receipt on the new session", func() bool { return after.Load() >= 1 })
}

func TestBindCloseUnbinds(t *testing.T) {
	smsc := startSMSC(t, SMSCConfig{})
	b := testBind(t, smsc.Addr(), nil, BindHooks{})
	waitBound(t, b)
	b.Close()
	poll(t, "the session to end", func() bool { return smsc.Stats().Sessions == 0 })
	if _, err := b.Submit(context.Background(), submitPDU("254712345678", "x")); !errors.Is(err, ErrNotBound) {
		t.Fatalf("submit after close: %v", err)
	}
}
