package smpp

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// Seconds counts what the SMSC answered ESME_ROK, second by second: not the submits it
// throttled nor the ones it refused, and never more in a second than its TPS cap.
func TestSMSCSecondsCountsAcceptedSubmits(t *testing.T) {
	const tps = 5
	smsc := startSMSC(t, SMSCConfig{TPS: tps, RejectPrefix: "25400"})
	b := testBind(t, smsc.Addr(), func(c *BindConfig) { c.ThrottlePause = time.Millisecond }, BindHooks{})
	waitBound(t, b)
	start := time.Now()
	if _, err := b.Submit(context.Background(), submitPDU("254001234567", "x")); !errors.Is(err, StatusInvDstAdr) {
		t.Fatalf("refused destination: %v", err)
	}
	// One submit at a time: more than the cap in a second must come from the count, not a
	// race between binds.
	ok, throttled := 0, 0
	for ok < 2*tps-2 { // two seconds at least
		_, err := b.Submit(context.Background(), submitPDU("254712345678", "x"))
		var st Status
		switch {
		case err == nil:
			ok++
		case errors.As(err, &st) && Classify(st) == ClassThrottle:
			throttled++
		default:
			t.Fatal(err)
		}
	}
	end := time.Now().Unix()
	if throttled == 0 {
		t.Fatal("never throttled above the SMSC's cap")
	}
	secs := smsc.Seconds(start)
	sum := 0
	for i, c := range secs {
		sum += c.Submits
		if c.Submits < 1 || c.Submits > tps {
			t.Errorf("second %d: %d submits; want 1 to %d", c.Second, c.Submits, tps)
		}
		if c.Second < start.Unix() || c.Second > end || i > 0 && c.Second <= secs[i-1].Second {
			t.Errorf("seconds out of order or range [%d, %d]: %+v", start.Unix(), end, secs)
		}
	}
	if st := smsc.Stats(); sum != ok || st.Submits != uint64(ok) || st.Throttled != uint64(throttled) || st.Rejected != 1 {
		t.Fatalf("seconds sum to %d, stats %+v; sent %d accepted, %d throttled, 1 refused", sum, st, ok, throttled)
	}
	if len(secs) < 2 {
		t.Fatalf("%d accepted at %d TPS in %d seconds: %+v", ok, tps, len(secs), secs)
	}
	last := secs[len(secs)-1]
	if got := smsc.Seconds(time.Unix(last.Second, 0)); !reflect.DeepEqual(got, []SecondCount{last}) {
		t.Errorf("Seconds from the last second = %+v; want %+v", got, last)
	}
	if got := smsc.Seconds(time.Now().Add(time.Minute)); len(got) != 0 {
		t.Errorf("Seconds from a minute ahead = %+v", got)
	}
}

// The ring keeps an hour: a slot an hour old is reused, and a count older than the ring is
// dropped rather than written over a live second.
func TestSMSCSecondsRingKeepsAnHour(t *testing.T) {
	s := startSMSC(t, SMSCConfig{})
	now := time.Now().Unix()
	s.countSecond(now - secondsKept - 5) // the slot of now-5, an hour ago
	if got := s.Seconds(time.Time{}); len(got) != 0 {
		t.Fatalf("an hour-old second is listed: %+v", got)
	}
	s.countSecond(now - 5)
	s.countSecond(now - 5)
	s.countSecond(now - secondsKept - 5) // late, and older than the slot holds
	s.countSecond(now - 20)
	want := []SecondCount{{now - 20, 1}, {now - 5, 2}}
	if got := s.Seconds(time.Time{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Seconds = %+v; want %+v", got, want)
	}
	if got := s.Seconds(time.Unix(now-10, 0)); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("Seconds from now-10 = %+v; want %+v", got, want[1:])
	}
}
