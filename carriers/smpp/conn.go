package smpp

import "net"

// Conn is one connection's PDU framing for a server outside this package (the tenants' SMPP
// server): the same coalesced writer and bounded reader the bind and the SMSC use.
type Conn struct{ w *wire }

// NewConn frames nc; its writer goroutine ends when the connection closes.
func NewConn(nc net.Conn) *Conn { return &Conn{w: newWire(nc, nil)} }

// Read returns the next PDU's octets, valid until the next Read; an error from PeekHeader
// (ErrBadLength) means the stream cannot be framed any more.
func (c *Conn) Read() ([]byte, error) { return c.w.read() }

// Send queues p behind what waits to be written.
func (c *Conn) Send(p *PDU) error { return c.w.send(p) }

// FlushClose writes what is queued, then closes.
func (c *Conn) FlushClose() { c.w.flushClose() }

// Close drops the connection at once; later sends return err.
func (c *Conn) Close(err error) { c.w.close(err) }

// NackStatus is the generic_nack status that answers a Decode or PeekHeader error.
func NackStatus(err error) Status { return nackStatus(err) }
