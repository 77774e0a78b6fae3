package smpp

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
)

// A peer that claims a PDU of MaxPDULen octets and sends ten costs what it sent, not what it
// claimed; one that claims more is refused before anything is read.
func TestReadAllocatesWhatArrives(t *testing.T) {
	for _, c := range []struct {
		length uint32
		want   error
	}{{MaxPDULen, io.ErrUnexpectedEOF}, {MaxPDULen + 1, ErrBadLength}, {0xFFFFFFFF, ErrBadLength}} {
		client, server := net.Pipe()
		w := newWire(server, nil)
		go func() {
			hdr := make([]byte, HeaderLen+10)
			binary.BigEndian.PutUint32(hdr, c.length)
			binary.BigEndian.PutUint32(hdr[4:], uint32(SubmitSM))
			_, _ = client.Write(hdr)
			_ = client.Close()
		}()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := w.read()
		runtime.ReadMemStats(&after)
		w.close(nil)
		if !errors.Is(err, c.want) {
			t.Fatalf("length %d: err %v, want %v", c.length, err, c.want)
		}
		// The 64 KiB read buffer is allocated with the wire; the frame itself must not be.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 2*64<<10 {
			t.Fatalf("length %d: reading allocated %d bytes", c.length, grew)
		}
	}
}

// A PDU larger than the read buffer (a long message_payload) arrives whole.
func TestReadLargePDU(t *testing.T) {
	client, server := net.Pipe()
	sender, receiver := newWire(client, nil), newWire(server, nil)
	defer sender.close(nil)
	defer receiver.close(nil)
	payload := make([]byte, 38_000) // with the second TLV, over the 64 KiB read buffer
	for i := range payload {
		payload[i] = byte(i)
	}
	p := PDU{Header: Header{ID: SubmitSM, Seq: 9}, Dest: "254712345678", TLVs: []TLV{{Tag: TagMessagePayload, Value: payload}, {Tag: 0x1400, Value: make([]byte, 30_000)}}}
	if err := sender.send(&p); err != nil {
		t.Fatal(err)
	}
	frame, err := receiver.read()
	if err != nil {
		t.Fatal(err)
	}
	var got PDU
	if err := Decode(frame, &got); err != nil {
		t.Fatal(err)
	}
	if v, ok := got.TLV(TagMessagePayload); !ok || len(v) != len(payload) || v[37_999] != payload[37_999] {
		t.Fatalf("message_payload of %d octets came back as %d", len(payload), len(v))
	}
}
