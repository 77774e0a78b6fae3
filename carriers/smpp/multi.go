// submit_multi and data_sm: the bodies that differ from submit_sm's (SMPP 3.4 §4.5, §4.7).

package smpp

import (
	"encoding/binary"
	"fmt"
)

// The PDUs of this file.
const (
	SubmitMulti     CommandID = 0x00000021
	SubmitMultiResp CommandID = 0x80000021
	DataSM          CommandID = 0x00000103
	DataSMResp      CommandID = 0x80000103
)

// Destination flags of a submit_multi's dest_address.
const (
	DestSME  byte = 1 // an SME address: TON, NPI, address
	DestList byte = 2 // a distribution list's name
)

// MaxDests is the most destinations a submit_multi names (number_of_dests is one octet).
const MaxDests = 255

// maxDataSMAddr bounds data_sm's addresses, NUL included: they are longer than submit_sm's.
const maxDataSMAddr = 65

// Dest is one of a submit_multi's destinations: an SME (TON, NPI, Addr) or a distribution
// list (Flag DestList, its name in Addr).
type Dest struct {
	Flag     byte
	TON, NPI byte
	Addr     string
}

// Unsuccess is a destination a submit_multi_resp refuses, with why.
type Unsuccess struct {
	TON, NPI byte
	Addr     string
	Status   Status
}

func (r *reader) submitMulti(p *PDU) {
	p.ServiceType = r.cstring(maxServiceType)
	p.SourceTON, p.SourceNPI = r.byte(), r.byte()
	p.Source = r.cstring(maxAddr)
	n := int(r.byte())
	if n > 0 && r.err == nil {
		p.Dests = make([]Dest, 0, min(n, len(r.b)/3))
	}
	for i := 0; i < n && r.err == nil; i++ {
		d := Dest{Flag: r.byte()}
		switch d.Flag {
		case DestSME:
			d.TON, d.NPI = r.byte(), r.byte()
			d.Addr = r.cstring(maxAddr)
		case DestList:
			d.Addr = r.cstring(maxAddr)
		default:
			r.fail(fmt.Errorf("dest_flag %d: %w", d.Flag, ErrMalformed))
		}
		p.Dests = append(p.Dests, d)
	}
	r.messageBody(p)
}

func (w *writer) submitMulti(p *PDU) {
	w.cstring(p.ServiceType, maxServiceType)
	w.b = append(w.b, p.SourceTON, p.SourceNPI)
	w.cstring(p.Source, maxAddr)
	if len(p.Dests) > MaxDests {
		w.fail(fmt.Errorf("%d destinations: %w", len(p.Dests), ErrFieldTooLong))
	}
	w.b = append(w.b, byte(len(p.Dests)))
	for _, d := range p.Dests {
		w.b = append(w.b, d.Flag)
		switch d.Flag {
		case DestSME:
			w.b = append(w.b, d.TON, d.NPI)
		case DestList:
		default:
			w.fail(fmt.Errorf("dest_flag %d: %w", d.Flag, ErrMalformed))
		}
		w.cstring(d.Addr, maxAddr)
	}
	w.messageBody(p)
}

func (r *reader) submitMultiResp(p *PDU) {
	if len(r.b) == 0 { // absent on an error status
		return
	}
	p.MessageID = r.cstring(maxMessageID)
	n := int(r.byte())
	for i := 0; i < n && r.err == nil; i++ {
		u := Unsuccess{TON: r.byte(), NPI: r.byte()}
		u.Addr = r.cstring(maxAddr)
		if len(r.b) < 4 {
			r.fail(fmt.Errorf("error_status_code cut short: %w", ErrMalformed))
			break
		}
		u.Status = Status(binary.BigEndian.Uint32(r.b))
		r.b = r.b[4:]
		p.Unsuccess = append(p.Unsuccess, u)
	}
}

func (w *writer) submitMultiResp(p *PDU) {
	if p.Status != StatusOK && p.MessageID == "" && len(p.Unsuccess) == 0 {
		return
	}
	w.cstring(p.MessageID, maxMessageID)
	if len(p.Unsuccess) > MaxDests {
		w.fail(fmt.Errorf("%d unsuccessful destinations: %w", len(p.Unsuccess), ErrFieldTooLong))
	}
	w.b = append(w.b, byte(len(p.Unsuccess)))
	for _, u := range p.Unsuccess {
		w.b = append(w.b, u.TON, u.NPI)
		w.cstring(u.Addr, maxAddr)
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(u.Status))
	}
}

func (r *reader) dataSM(p *PDU) {
	p.ServiceType = r.cstring(maxServiceType)
	p.SourceTON, p.SourceNPI = r.byte(), r.byte()
	p.Source = r.cstring(maxDataSMAddr)
	p.DestTON, p.DestNPI = r.byte(), r.byte()
	p.Dest = r.cstring(maxDataSMAddr)
	p.ESMClass, p.RegisteredDelivery, p.DataCoding = r.byte(), r.byte(), r.byte()
}

func (w *writer) dataSM(p *PDU) {
	w.cstring(p.ServiceType, maxServiceType)
	w.b = append(w.b, p.SourceTON, p.SourceNPI)
	w.cstring(p.Source, maxDataSMAddr)
	w.b = append(w.b, p.DestTON, p.DestNPI)
	w.cstring(p.Dest, maxDataSMAddr)
	w.b = append(w.b, p.ESMClass, p.RegisteredDelivery, p.DataCoding)
	if len(p.ShortMessage) > 0 {
		w.fail(fmt.Errorf("data_sm carries its text in message_payload: %w", ErrMalformed))
	}
}
