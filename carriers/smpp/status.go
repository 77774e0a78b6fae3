package smpp

import "fmt"

// Status is a PDU's command_status: 0 in requests, the outcome in responses.
type Status uint32

// The statuses this package writes or acts on (SMPP 3.4 §5.1.3).
const (
	StatusOK          Status = 0x00
	StatusInvMsgLen   Status = 0x01 // ESME_RINVMSGLEN
	StatusInvCmdLen   Status = 0x02 // ESME_RINVCMDLEN
	StatusInvCmdID    Status = 0x03 // ESME_RINVCMDID
	StatusInvBndSts   Status = 0x04 // ESME_RINVBNDSTS: not bound for that
	StatusAlyBnd      Status = 0x05 // ESME_RALYBND
	StatusSysErr      Status = 0x08 // ESME_RSYSERR
	StatusInvSrcAdr   Status = 0x0A // ESME_RINVSRCADR: sender not allowed
	StatusInvDstAdr   Status = 0x0B // ESME_RINVDSTADR
	StatusInvMsgID    Status = 0x0C // ESME_RINVMSGID
	StatusBindFail    Status = 0x0D // ESME_RBINDFAIL
	StatusInvPaswd    Status = 0x0E // ESME_RINVPASWD
	StatusInvSysID    Status = 0x0F // ESME_RINVSYSID
	StatusMsgQFul     Status = 0x14 // ESME_RMSGQFUL: transient, slow down
	StatusInvESMClass Status = 0x43 // ESME_RINVESMCLASS
	StatusSubmitFail  Status = 0x45 // ESME_RSUBMITFAIL
	StatusInvSrcTON   Status = 0x48 // ESME_RINVSRCTON
	StatusInvSrcNPI   Status = 0x49 // ESME_RINVSRCNPI
	StatusInvDstTON   Status = 0x50 // ESME_RINVDSTTON
	StatusInvDstNPI   Status = 0x51 // ESME_RINVDSTNPI
	StatusThrottled   Status = 0x58 // ESME_RTHROTTLED: transient, slow down
	StatusXTAppn      Status = 0x64 // ESME_RX_T_APPN: the receiver asks for a resend later
	StatusXPAppn      Status = 0x65 // ESME_RX_P_APPN: the receiver will never take it
	StatusQueryFail   Status = 0x67 // ESME_RQUERYFAIL
	StatusUnknownErr  Status = 0xFF // ESME_RUNKNOWNERR
)

var statusNames = map[Status]string{
	StatusOK: "ESME_ROK", StatusInvMsgLen: "ESME_RINVMSGLEN", StatusInvCmdLen: "ESME_RINVCMDLEN",
	StatusInvCmdID: "ESME_RINVCMDID", StatusInvBndSts: "ESME_RINVBNDSTS", StatusAlyBnd: "ESME_RALYBND",
	StatusSysErr: "ESME_RSYSERR", StatusInvSrcAdr: "ESME_RINVSRCADR", StatusInvDstAdr: "ESME_RINVDSTADR",
	StatusInvMsgID: "ESME_RINVMSGID", StatusBindFail: "ESME_RBINDFAIL", StatusInvPaswd: "ESME_RINVPASWD",
	StatusInvSysID: "ESME_RINVSYSID", StatusMsgQFul: "ESME_RMSGQFUL", StatusInvESMClass: "ESME_RINVESMCLASS",
	StatusSubmitFail: "ESME_RSUBMITFAIL", StatusInvSrcTON: "ESME_RINVSRCTON", StatusInvSrcNPI: "ESME_RINVSRCNPI",
	StatusInvDstTON: "ESME_RINVDSTTON", StatusInvDstNPI: "ESME_RINVDSTNPI", StatusThrottled: "ESME_RTHROTTLED",
	StatusXTAppn: "ESME_RX_T_APPN", StatusXPAppn: "ESME_RX_P_APPN", StatusQueryFail: "ESME_RQUERYFAIL", StatusUnknownErr: "ESME_RUNKNOWNERR",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status(%#x)", uint32(s))
}

// Error makes a non-OK status an error value that errors.As finds.
func (s Status) Error() string { return "smpp: " + s.String() }

// Class is what a submit_sm_resp's status means for the message.
type Class uint8

// The classes.
const (
	ClassOK        Class = iota
	ClassThrottle        // slow the bind and submit the same part again; never fails it
	ClassTemporary       // retry a few times
	ClassPermanent       // fail the message (and refund it)
	ClassSession         // the bind is broken: rebind, then retry
)

// Classify sorts a submit_sm_resp status (notes/telecom.md §3.6). Statuses not named are
// permanent: an SMSC that refuses a message for a reason we do not know will refuse it again.
func Classify(s Status) Class {
	switch s {
	case StatusOK:
		return ClassOK
	case StatusThrottled, StatusMsgQFul:
		return ClassThrottle
	case StatusSysErr, StatusSubmitFail, StatusUnknownErr, StatusXTAppn:
		return ClassTemporary
	case StatusInvBndSts, StatusAlyBnd:
		return ClassSession
	}
	return ClassPermanent
}
