package smpplink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// inbox collects what the links hand the inbound sink.
type inbox struct {
	mu   sync.Mutex
	got  []smpp.MO
	nets []carriers.Network
}

func (b *inbox) sink(_ context.Context, n carriers.Network, m smpp.MO) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got, b.nets = append(b.got, m), append(b.nets, n)
	return nil
}

func (b *inbox) all() ([]smpp.MO, []carriers.Network) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]smpp.MO(nil), b.got...), append([]carriers.Network(nil), b.nets...)
}

// mo has the node SMSC send a subscriber's message and waits for the answers of its parts.
func (s *nodeSMSC) mo(from, text, concat string) []map[string]any {
	s.t.Helper()
	b, _ := json.Marshal(map[string]string{"from": from, "to": "22384", "text": text, "concat": concat})
	if _, err := fmt.Fprintf(s.stdin, "mo %s\n", b); err != nil {
		s.t.Fatal(err)
	}
	last := s.wait("mo_resp", func(ev map[string]any) bool { return ev["from"] == from && ev["part"] == ev["of"] })
	var out []map[string]any
	for _, ev := range s.all("mo_resp") {
		if ev["from"] == from {
			out = append(out, ev)
		}
	}
	if len(out) != int(last["of"].(float64)) {
		s.t.Fatalf("%d answers for %v parts", len(out), last["of"])
	}
	return out
}

// Mobile-originated messages from node-smpp, an SMPP implementation nobody on this project
// wrote: refused for now (ESME_RX_T_APPN) until the inbound sink is wired, then handed on
// whole and answered ESME_ROK, with a surrogate pair split across two UCS-2 parts joined.
func TestNodeSMPPMobileOriginated(t *testing.T) {
	s := startNodeSMSC(t)
	binds, err := smpp.ParseBinds("safaricom", fmt.Sprintf("smpp://tuma:secret@127.0.0.1:%d?reconnect=20ms-200ms", s.port))
	if err != nil {
		t.Fatal(err)
	}
	set, err := New(map[carriers.Network][]smpp.BindConfig{carriers.Safaricom: binds},
		slog.New(slog.NewTextHandler(io.Discard, nil)), smpp.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := set.WaitBound(ctx); err != nil {
		t.Fatal(err)
	}

	if rs := s.mo("254712000009", "STOP", "udh"); rs[0]["status"] != float64(smpp.StatusXTAppn) {
		t.Fatalf("an MO before the sink is wired answered %v; want ESME_RX_T_APPN", rs[0]["status"])
	}
	box := &inbox{}
	set.Inbound(box.sink)
	long := strings.Repeat("ж", 66) + "😀" + strings.Repeat("a", 70) // the pair straddles parts 1 and 2
	sent := []struct{ from, text, concat string }{
		{"254712000001", "STOP", "udh"},
		{"254712000002", long, "udh"},
		{"254712000003", long, "udh16"},
		{"254712000004", long, "sar"},
	}
	for _, m := range sent {
		rs := s.mo(m.from, m.text, m.concat)
		for _, r := range rs {
			if r["status"] != 0.0 {
				t.Fatalf("%s part %v answered %v", m.from, r["part"], r["status"])
			}
		}
		if m.text == long && len(rs) != 3 {
			t.Fatalf("the long text went in %d parts", len(rs))
		}
	}
	got, nets := box.all()
	if len(got) != len(sent) {
		t.Fatalf("the sink got %d messages; want %d", len(got), len(sent))
	}
	for i, m := range sent {
		if got[i].Text != m.text || got[i].Source != m.from || got[i].Dest != "22384" || got[i].Incomplete ||
			nets[i] != carriers.Safaricom {
			t.Errorf("%s (%s): got %+v on %s", m.from, m.concat, got[i], nets[i])
		}
	}
}
