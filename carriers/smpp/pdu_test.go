package smpp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// samplePDUs are one of each PDU the package speaks, with every field it carries set.
func samplePDUs() []PDU {
	return []PDU{
		{Header: Header{ID: BindTransceiver, Seq: 1}, SystemID: "tuma", Password: "secret", SystemType: "VMA",
			InterfaceVersion: 0x34, AddrTON: 1, AddrNPI: 1, AddressRange: ""},
		{Header: Header{ID: BindTransceiverResp, Seq: 1}, SystemID: "smsc",
			TLVs: []TLV{ByteTLV(TagSCInterfaceVersion, 0x34)}},
		{Header: Header{ID: BindTransceiverResp, Status: StatusInvPaswd, Seq: 1}},
		{Header: Header{ID: SubmitSM, Seq: 2}, SourceTON: 5, Source: "TUMA", DestTON: 1, DestNPI: 1,
			Dest: "254712345678", ESMClass: ESMClassUDHI, RegisteredDelivery: 1, DataCoding: CodingUCS2,
			ShortMessage: []byte{5, 0, 3, 9, 2, 1, 0, 'h', 0, 'i'}},
		{Header: Header{ID: SubmitSM, Seq: 3}, Source: "TUMA", Dest: "254712345678", ValidityPeriod: "000001000000000R",
			ShortMessage: []byte("hello"), TLVs: []TLV{Uint16TLV(TagSarMsgRefNum, 0x1234),
				ByteTLV(TagSarTotalSegments, 3), ByteTLV(TagSarSegmentSeqnum, 2)}},
		{Header: Header{ID: SubmitSMResp, Seq: 2}, MessageID: "1a2b3c"},
		{Header: Header{ID: SubmitSMResp, Status: StatusThrottled, Seq: 3}},
		{Header: Header{ID: DeliverSM, Seq: 7}, Source: "254712345678", Dest: "TUMA", ESMClass: ESMClassReceipt,
			ShortMessage: []byte("id:1a2b3c sub:001 dlvrd:001 submit date:2611241200 done date:2611241201 stat:DELIVRD err:000 text:hi"),
			TLVs:         []TLV{StringTLV(TagReceiptedMessageID, "1a2b3c"), ByteTLV(TagMessageState, 2), {Tag: TagNetworkErrorCode, Value: []byte{3, 0, 1}}}},
		{Header: Header{ID: DeliverSMResp, Seq: 7}},
		{Header: Header{ID: QuerySM, Seq: 8}, MessageID: "1a2b3c", SourceTON: 5, Source: "TUMA"},
		{Header: Header{ID: QuerySMResp, Seq: 8}, MessageID: "1a2b3c", MessageState: 2},
		{Header: Header{ID: QuerySMResp, Status: StatusQueryFail, Seq: 9}},
		{Header: Header{ID: EnquireLink, Seq: 10}},
		{Header: Header{ID: EnquireLinkResp, Seq: 10}},
		{Header: Header{ID: Unbind, Seq: 11}},
		{Header: Header{ID: UnbindResp, Seq: 11}},
		{Header: Header{ID: GenericNack, Status: StatusInvCmdID, Seq: 12}},
		{Header: Header{ID: SubmitMulti, Seq: 13}, SourceTON: 5, Source: "TUMA", Dests: []Dest{
			{Flag: DestSME, TON: 1, NPI: 1, Addr: "254712345678"}, {Flag: DestList, Addr: "staff"}},
			ESMClass: ESMClassUDHI, RegisteredDelivery: 1, DataCoding: CodingUCS2, ShortMessage: []byte{5, 0, 3, 9, 2, 1, 0, 'h'},
			TLVs: []TLV{ByteTLV(TagSarTotalSegments, 2)}},
		{Header: Header{ID: SubmitMultiResp, Seq: 13}, MessageID: "m1", Unsuccess: []Unsuccess{
			{TON: 1, NPI: 1, Addr: "0200000000", Status: StatusInvDstAdr}}},
		{Header: Header{ID: SubmitMultiResp, Seq: 14}, MessageID: "m2"},
		{Header: Header{ID: SubmitMultiResp, Status: StatusThrottled, Seq: 15}},
		{Header: Header{ID: DataSM, Seq: 16}, SourceTON: 5, Source: "TUMA", DestTON: 1, DestNPI: 1, Dest: "254712345678",
			RegisteredDelivery: 1, DataCoding: CodingUCS2, TLVs: []TLV{{Tag: TagMessagePayload, Value: []byte{0, 'h', 0, 'i'}}}},
		{Header: Header{ID: DataSMResp, Seq: 16}, MessageID: "m3"},
		{Header: Header{ID: DataSMResp, Status: StatusInvDstAdr, Seq: 17}},
	}
}

func TestPDURoundTrip(t *testing.T) {
	for _, p := range samplePDUs() {
		b, err := p.Append(nil)
		if err != nil {
			t.Fatalf("%s: %v", p.ID, err)
		}
		var got PDU
		if err := Decode(b, &got); err != nil {
			t.Fatalf("%s: decode: %v", p.ID, err)
		}
		p.Length = uint32(len(b))
		if !reflect.DeepEqual(got, p) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", p.ID, got, p)
		}
	}
}

// The octets of spec examples, written out by hand from SMPP 3.4 §4.
func TestPDUWireFormat(t *testing.T) {
	cases := []struct {
		p   PDU
		hex string
	}{
		{PDU{Header: Header{ID: EnquireLink, Seq: 1}}, "00000010" + "00000015" + "00000000" + "00000001"},
		{PDU{Header: Header{ID: BindTransceiver, Seq: 2}, SystemID: "ab", Password: "pw", InterfaceVersion: 0x34},
			"0000001b" + "00000009" + "00000000" + "00000002" + "616200" + "707700" + "00" + "34" + "00" + "00" + "00"},
		{PDU{Header: Header{ID: SubmitSMResp, Seq: 3}, MessageID: "9f"}, "00000013" + "80000004" + "00000000" + "00000003" + "396600"},
		{PDU{Header: Header{ID: SubmitSMResp, Status: StatusThrottled, Seq: 4}}, "00000010" + "80000004" + "00000058" + "00000004"},
		{PDU{Header: Header{ID: SubmitSM, Seq: 5}, Source: "A", Dest: "2547", DestTON: 1, DestNPI: 1, ShortMessage: []byte("hi"),
			TLVs: []TLV{ByteTLV(TagSarTotalSegments, 2)}},
			"0000002d" + "00000004" + "00000000" + "00000005" + "00" + "0000" + "4100" + "0101" + "3235343700" +
				"000000" + "00" + "00" + "00" + "00" + "00" + "00" + "02" + "6869" + "020e" + "0001" + "02"},
	}
	for _, c := range cases {
		b, err := c.p.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != c.hex {
			t.Errorf("%s:\n got %s\nwant %s", c.p.ID, got, c.hex)
		}
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	good, _ := (&PDU{Header: Header{ID: SubmitSMResp, Seq: 1}, MessageID: "abc"}).Append(nil)
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"short header":   {good[:10], ErrBadLength},
		"length under":   {append([]byte{0, 0, 0, 8}, good[4:]...), ErrBadLength},
		"length over":    {append([]byte{0, 1, 0, 0}, good[4:]...), ErrBadLength},
		"length differs": {good[:len(good)-1], ErrBadLength},
		"unknown id":     {[]byte{0, 0, 0, 16, 0, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 1}, ErrUnknownCommand},
		"no NUL":         {[]byte{0, 0, 0, 19, 0x80, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 'b', 'c'}, ErrMalformed},
		"left over":      {[]byte{0, 0, 0, 17, 0, 0, 0, 0x15, 0, 0, 0, 0, 0, 0, 0, 1, 9}, ErrMalformed},
	}
	long := append(bytes.Repeat([]byte{'x'}, 70), 0)
	lb := append([]byte{0, 0, 0, byte(16 + len(long)), 0x80, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1}, long...)
	cases["message_id over 65"] = struct {
		b    []byte
		want error
	}{lb, ErrFieldTooLong}
	sm, _ := (&PDU{Header: Header{ID: SubmitSM, Seq: 1}, ShortMessage: []byte("hi")}).Append(nil)
	cut := append([]byte(nil), sm...)
	cut[len(cut)-3] = 200 // sm_length beyond the body
	cases["sm_length beyond body"] = struct {
		b    []byte
		want error
	}{cut, ErrMalformed}
	tlv := append(append([]byte(nil), sm...), 0x04, 0x24, 0xff, 0xff, 1)
	tlv[3] = byte(len(tlv))
	cases["TLV beyond body"] = struct {
		b    []byte
		want error
	}{tlv, ErrMalformed}
	for name, c := range cases {
		var p PDU
		if err := Decode(c.b, &p); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
}

func TestAppendRefusesWhatTheWireCannotCarry(t *testing.T) {
	cases := map[string]PDU{
		"system_id 16":       {Header: Header{ID: BindTransceiver}, SystemID: "0123456789abcdef"},
		"NUL in address":     {Header: Header{ID: SubmitSM}, Dest: "2547\x00"},
		"short_message 255":  {Header: Header{ID: SubmitSM}, ShortMessage: make([]byte, 255)},
		"TLV on enquire":     {Header: Header{ID: EnquireLink}, TLVs: []TLV{ByteTLV(1, 1)}},
		"unknown command id": {Header: Header{ID: 0x77}},
	}
	for name, p := range cases {
		b, err := p.Append([]byte("keep"))
		if err == nil || string(b) != "keep" {
			t.Errorf("%s: err %v, buffer %q", name, err, b)
		}
	}
}

func TestTLVLimit(t *testing.T) {
	p := PDU{Header: Header{ID: SubmitSM}}
	for i := range maxTLVs + 1 {
		p.TLVs = append(p.TLVs, TLV{Tag: uint16(0x1400 + i)})
	}
	b, err := p.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Decode(b, &PDU{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d TLVs: %v", maxTLVs+1, err)
	}
}

// FuzzDecode feeds arbitrary octets to the decoder: it must not panic, what it accepts must
// encode back to the same octets' meaning, and its allocation is bounded by the input.
func FuzzDecode(f *testing.F) {
	for _, p := range samplePDUs() {
		b, _ := p.Append(nil)
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p PDU
		if err := Decode(b, &p); err != nil {
			return
		}
		out, err := p.Append(nil)
		if err != nil {
			return // e.g. a resp with an error status and a body: we write none
		}
		var q PDU
		if err := Decode(out, &q); err != nil {
			t.Fatalf("re-encoded PDU does not decode: %v", err)
		}
		q.Length = p.Length
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the PDU\n %+v\n %+v", p, q)
		}
	})
}
