// Package smpp speaks SMPP 3.4: the PDU codec, a client bind (ESME) with a window and
// coalesced writes, an SMSC that simulates a network over the same codec, and the reading of
// delivery receipts. No Go SMPP module is available here; the codec follows the v3.4 spec
// (Issue 1.2) and notes/telecom.md §3.
package smpp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// CommandID names a PDU; a response's id is its request's with the top bit set.
type CommandID uint32

// The PDUs this package reads and writes.
const (
	GenericNack         CommandID = 0x80000000
	BindReceiver        CommandID = 0x00000001
	BindReceiverResp    CommandID = 0x80000001
	BindTransmitter     CommandID = 0x00000002
	BindTransmitterResp CommandID = 0x80000002
	QuerySM             CommandID = 0x00000003
	QuerySMResp         CommandID = 0x80000003
	SubmitSM            CommandID = 0x00000004
	SubmitSMResp        CommandID = 0x80000004
	DeliverSM           CommandID = 0x00000005
	DeliverSMResp       CommandID = 0x80000005
	Unbind              CommandID = 0x00000006
	UnbindResp          CommandID = 0x80000006
	BindTransceiver     CommandID = 0x00000009
	BindTransceiverResp CommandID = 0x80000009
	EnquireLink         CommandID = 0x00000015
	EnquireLinkResp     CommandID = 0x80000015
)

// IsResponse says whether id answers a request.
func (id CommandID) IsResponse() bool { return id&0x80000000 != 0 }

// Response is the id that answers id.
func (id CommandID) Response() CommandID { return id | 0x80000000 }

func (id CommandID) String() string {
	switch id {
	case GenericNack:
		return "generic_nack"
	case BindReceiver:
		return "bind_receiver"
	case BindReceiverResp:
		return "bind_receiver_resp"
	case BindTransmitter:
		return "bind_transmitter"
	case BindTransmitterResp:
		return "bind_transmitter_resp"
	case QuerySM:
		return "query_sm"
	case QuerySMResp:
		return "query_sm_resp"
	case SubmitSM:
		return "submit_sm"
	case SubmitSMResp:
		return "submit_sm_resp"
	case DeliverSM:
		return "deliver_sm"
	case DeliverSMResp:
		return "deliver_sm_resp"
	case Unbind:
		return "unbind"
	case UnbindResp:
		return "unbind_resp"
	case BindTransceiver:
		return "bind_transceiver"
	case BindTransceiverResp:
		return "bind_transceiver_resp"
	case EnquireLink:
		return "enquire_link"
	case EnquireLinkResp:
		return "enquire_link_resp"
	case SubmitMulti:
		return "submit_multi"
	case SubmitMultiResp:
		return "submit_multi_resp"
	case DataSM:
		return "data_sm"
	case DataSMResp:
		return "data_sm_resp"
	}
	return fmt.Sprintf("command(%#08x)", uint32(id))
}

// HeaderLen is the octets of every PDU's header.
const HeaderLen = 16

// MaxPDULen bounds a PDU we read: a submit_sm with a full message_payload fits. A peer's
// larger command_length is refused before anything is allocated for it.
const MaxPDULen = 70_000

// Header starts every PDU. Length is set by Append and checked by Decode.
type Header struct {
	Length uint32
	ID     CommandID
	Status Status
	Seq    uint32
}

// PDU is any of the PDUs above; the fields a command does not carry stay zero. One flat
// value (not an interface per command) lets a session decode into the same value for every
// PDU it reads.
type PDU struct {
	Header

	// bind_*: the ESME's credentials; bind_*_resp carries SystemID alone.
	SystemID         string
	Password         string
	SystemType       string
	InterfaceVersion byte
	AddrTON, AddrNPI byte
	AddressRange     string

	// submit_sm and deliver_sm (the same layout); query_sm uses Source* too; submit_multi all
	// but Dest*; data_sm the addresses, ESMClass, RegisteredDelivery and DataCoding.
	ServiceType          string
	SourceTON, SourceNPI byte
	Source               string
	DestTON, DestNPI     byte
	Dest                 string
	ESMClass             byte
	ProtocolID           byte
	PriorityFlag         byte
	ScheduleDeliveryTime string
	ValidityPeriod       string
	RegisteredDelivery   byte
	ReplaceIfPresent     byte
	DataCoding           byte
	SMDefaultMsgID       byte
	ShortMessage         []byte

	// submit_sm_resp, deliver_sm_resp, query_sm, query_sm_resp.
	MessageID string
	// submit_multi's destinations, and submit_multi_resp's refused ones (multi.go).
	Dests     []Dest
	Unsuccess []Unsuccess
	// query_sm_resp.
	FinalDate    string
	MessageState byte
	ErrorCode    byte

	TLVs []TLV
}

// ESM class bits this package sets or reads.
const (
	ESMClassUDHI    byte = 0x40 // short_message starts with a user data header
	ESMClassReceipt byte = 0x04 // deliver_sm is a delivery receipt (bits 5-2)
	esmTypeMask     byte = 0x3C
)

// IsReceipt says whether a deliver_sm is an SMSC delivery receipt.
func (p *PDU) IsReceipt() bool { return p.ESMClass&esmTypeMask == ESMClassReceipt }

// Data codings this package sends.
const (
	CodingDefault byte = 0x00 // the SMSC's default alphabet: GSM 03.38, unpacked
	CodingUCS2    byte = 0x08 // UTF-16BE
)

// Field limits from the spec, NUL included.
const (
	maxSystemID    = 16
	maxPassword    = 9
	maxSystemType  = 13
	maxAddrRange   = 41
	maxServiceType = 6
	maxAddr        = 21
	maxTime        = 17
	maxMessageID   = 65
	maxShortMsg    = 254
)

// Errors of the codec. A decode error wraps one of them; a session answers ErrUnknownCommand
// and ErrBadLength with generic_nack (ESME_RINVCMDID, ESME_RINVCMDLEN).
var (
	ErrBadLength      = errors.New("smpp: bad command_length")
	ErrUnknownCommand = errors.New("smpp: unknown command_id")
	ErrMalformed      = errors.New("smpp: malformed PDU body")
	ErrFieldTooLong   = errors.New("smpp: field too long")
)

// PeekHeader reads a header from the first 16 octets of b, and checks its length against
// [HeaderLen, MaxPDULen].
func PeekHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%d octets: %w", len(b), ErrBadLength)
	}
	h := Header{
		Length: binary.BigEndian.Uint32(b),
		ID:     CommandID(binary.BigEndian.Uint32(b[4:])),
		Status: Status(binary.BigEndian.Uint32(b[8:])),
		Seq:    binary.BigEndian.Uint32(b[12:]),
	}
	if h.Length < HeaderLen || h.Length > MaxPDULen {
		return h, fmt.Errorf("command_length %d: %w", h.Length, ErrBadLength)
	}
	return h, nil
}

// Decode reads the PDU in b, which holds it whole (its header's length). Strings and octet
// fields are copied, so b may be reused.
func Decode(b []byte, p *PDU) error {
	h, err := PeekHeader(b)
	if err != nil {
		return err
	}
	if int(h.Length) != len(b) {
		return fmt.Errorf("command_length %d for %d octets: %w", h.Length, len(b), ErrBadLength)
	}
	*p = PDU{Header: h}
	r := reader{b: b[HeaderLen:]}
	tlvs := false
	switch h.ID {
	case GenericNack, EnquireLink, EnquireLinkResp, Unbind, UnbindResp:
	case BindReceiver, BindTransmitter, BindTransceiver:
		p.SystemID = r.cstring(maxSystemID)
		p.Password = r.cstring(maxPassword)
		p.SystemType = r.cstring(maxSystemType)
		p.InterfaceVersion = r.byte()
		p.AddrTON, p.AddrNPI = r.byte(), r.byte()
		p.AddressRange = r.cstring(maxAddrRange)
	case BindReceiverResp, BindTransmitterResp, BindTransceiverResp:
		if len(r.b) > 0 { // absent on an error status
			p.SystemID = r.cstring(maxSystemID)
			tlvs = true
		}
	case SubmitSM, DeliverSM:
		p.ServiceType = r.cstring(maxServiceType)
		p.SourceTON, p.SourceNPI = r.byte(), r.byte()
		p.Source = r.cstring(maxAddr)
		p.DestTON, p.DestNPI = r.byte(), r.byte()
		p.Dest = r.cstring(maxAddr)
		r.messageBody(p)
		tlvs = true
	case SubmitSMResp, DeliverSMResp:
		if len(r.b) > 0 { // absent on an error status
			p.MessageID = r.cstring(maxMessageID)
		}
	case SubmitMulti:
		r.submitMulti(p)
		tlvs = true
	case SubmitMultiResp:
		r.submitMultiResp(p)
	case DataSM:
		r.dataSM(p)
		tlvs = true
	case DataSMResp:
		if len(r.b) > 0 {
			p.MessageID = r.cstring(maxMessageID)
			tlvs = true
		}
	case QuerySM:
		p.MessageID = r.cstring(maxMessageID)
		p.SourceTON, p.SourceNPI = r.byte(), r.byte()
		p.Source = r.cstring(maxAddr)
	case QuerySMResp:
		if len(r.b) > 0 {
			p.MessageID = r.cstring(maxMessageID)
			p.FinalDate = r.cstring(maxTime)
			p.MessageState, p.ErrorCode = r.byte(), r.byte()
		}
	default:
		return fmt.Errorf("%s: %w", h.ID, ErrUnknownCommand)
	}
	if tlvs && r.err == nil {
		p.TLVs = r.tlvs()
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", h.ID, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%s: %d octets left over: %w", h.ID, len(r.b), ErrMalformed)
	}
	return nil
}

// Append writes p to b with its command_length computed, and returns the longer slice.
func (p *PDU) Append(b []byte) ([]byte, error) {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, 0) // length, set below
	b = binary.BigEndian.AppendUint32(b, uint32(p.ID))
	b = binary.BigEndian.AppendUint32(b, uint32(p.Status))
	b = binary.BigEndian.AppendUint32(b, p.Seq)
	w := writer{b: b}
	tlvs := false
	switch p.ID {
	case GenericNack, EnquireLink, EnquireLinkResp, Unbind, UnbindResp:
	case BindReceiver, BindTransmitter, BindTransceiver:
		w.cstring(p.SystemID, maxSystemID)
		w.cstring(p.Password, maxPassword)
		w.cstring(p.SystemType, maxSystemType)
		w.b = append(w.b, p.InterfaceVersion, p.AddrTON, p.AddrNPI)
		w.cstring(p.AddressRange, maxAddrRange)
	case BindReceiverResp, BindTransmitterResp, BindTransceiverResp:
		if p.Status == StatusOK || p.SystemID != "" || len(p.TLVs) > 0 {
			w.cstring(p.SystemID, maxSystemID)
			tlvs = true
		}
	case SubmitSM, DeliverSM:
		w.cstring(p.ServiceType, maxServiceType)
		w.b = append(w.b, p.SourceTON, p.SourceNPI)
		w.cstring(p.Source, maxAddr)
		w.b = append(w.b, p.DestTON, p.DestNPI)
		w.cstring(p.Dest, maxAddr)
		w.messageBody(p)
		tlvs = true
	case SubmitSMResp, DeliverSMResp:
		if p.Status == StatusOK || p.MessageID != "" {
			w.cstring(p.MessageID, maxMessageID)
		}
	case SubmitMulti:
		w.submitMulti(p)
		tlvs = true
	case SubmitMultiResp:
		w.submitMultiResp(p)
	case DataSM:
		w.dataSM(p)
		tlvs = true
	case DataSMResp:
		if p.Status == StatusOK || p.MessageID != "" || len(p.TLVs) > 0 {
			w.cstring(p.MessageID, maxMessageID)
			tlvs = true
		}
	case QuerySM:
		w.cstring(p.MessageID, maxMessageID)
		w.b = append(w.b, p.SourceTON, p.SourceNPI)
		w.cstring(p.Source, maxAddr)
	case QuerySMResp:
		if p.Status == StatusOK || p.MessageID != "" || p.FinalDate != "" || p.MessageState != 0 || p.ErrorCode != 0 {
			w.cstring(p.MessageID, maxMessageID)
			w.cstring(p.FinalDate, maxTime)
			w.b = append(w.b, p.MessageState, p.ErrorCode)
		}
	default:
		return b[:start], fmt.Errorf("%s: %w", p.ID, ErrUnknownCommand)
	}
	if tlvs {
		w.tlvs(p.TLVs)
	} else if len(p.TLVs) > 0 {
		w.fail(fmt.Errorf("%s carries no TLVs: %w", p.ID, ErrMalformed))
	}
	if w.err != nil {
		return b[:start], fmt.Errorf("%s: %w", p.ID, w.err)
	}
	n := len(w.b) - start
	if n > MaxPDULen {
		return b[:start], fmt.Errorf("%s of %d octets: %w", p.ID, n, ErrBadLength)
	}
	binary.BigEndian.PutUint32(w.b[start:], uint32(n))
	return w.b, nil
}

// reader takes fields off a body; the first error sticks and later reads return zeros.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail(fmt.Errorf("body ends early: %w", ErrMalformed))
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// cstring reads a NUL-terminated string of at most max octets, NUL included.
func (r *reader) cstring(max int) string {
	if r.err != nil {
		return ""
	}
	for i := 0; i < len(r.b) && i < max; i++ {
		if r.b[i] == 0 {
			s := string(r.b[:i])
			r.b = r.b[i+1:]
			return s
		}
	}
	if len(r.b) < max {
		r.fail(fmt.Errorf("string without NUL: %w", ErrMalformed))
	} else {
		r.fail(fmt.Errorf("string over %d octets: %w", max, ErrFieldTooLong))
	}
	return ""
}

func (r *reader) octets(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail(fmt.Errorf("%d octets wanted, %d left: %w", n, len(r.b), ErrMalformed))
		return nil
	}
	if n == 0 {
		return nil
	}
	out := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return out
}

type writer struct {
	b   []byte
	err error
}

func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) cstring(s string, max int) {
	if len(s) >= max {
		w.fail(fmt.Errorf("%q is over %d octets: %w", s, max-1, ErrFieldTooLong))
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			w.fail(fmt.Errorf("%q holds a NUL: %w", s, ErrMalformed))
			return
		}
	}
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
}

// messageBody reads what submit_sm, deliver_sm and submit_multi carry after their addresses:
// esm_class through short_message.
func (r *reader) messageBody(p *PDU) {
	p.ESMClass, p.ProtocolID, p.PriorityFlag = r.byte(), r.byte(), r.byte()
	p.ScheduleDeliveryTime = r.cstring(maxTime)
	p.ValidityPeriod = r.cstring(maxTime)
	p.RegisteredDelivery, p.ReplaceIfPresent = r.byte(), r.byte()
	p.DataCoding, p.SMDefaultMsgID = r.byte(), r.byte()
	p.ShortMessage = r.octets(int(r.byte()))
}

// messageBody writes what reader.messageBody reads.
func (w *writer) messageBody(p *PDU) {
	w.b = append(w.b, p.ESMClass, p.ProtocolID, p.PriorityFlag)
	w.cstring(p.ScheduleDeliveryTime, maxTime)
	w.cstring(p.ValidityPeriod, maxTime)
	w.b = append(w.b, p.RegisteredDelivery, p.ReplaceIfPresent, p.DataCoding, p.SMDefaultMsgID)
	if len(p.ShortMessage) > maxShortMsg {
		w.fail(fmt.Errorf("short_message of %d octets: %w", len(p.ShortMessage), ErrFieldTooLong))
	}
	w.b = append(w.b, byte(len(p.ShortMessage)))
	w.b = append(w.b, p.ShortMessage...)
}
