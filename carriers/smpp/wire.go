package smpp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// wire is one TCP connection's PDU framing, shared by the client bind and the SMSC. Writes
// are coalesced: senders append encoded PDUs to a buffer and one writer goroutine hands
// whatever has gathered to the socket in one syscall.
type wire struct {
	nc net.Conn
	br *bufio.Reader
	rb []byte // the frame being read; grows with what actually arrives

	mu      sync.Mutex
	pending []byte // encoded, not yet written
	spare   []byte
	closed  bool
	werr    error
	kick    chan struct{} // cap 1: the writer has work
	done    chan struct{} // closed when the writer stops
	onWrite func(pdus, octets int)
	queued  int // PDUs in pending
}

// ErrClosed is returned by sends on a connection that is gone.
var ErrClosed = errors.New("smpp: connection closed")

func newWire(nc net.Conn, onWrite func(pdus, octets int)) *wire {
	w := &wire{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), kick: make(chan struct{}, 1),
		done: make(chan struct{}), onWrite: onWrite}
	go w.writeLoop()
	return w
}

// send encodes p after whatever is waiting to be written.
func (w *wire) send(p *PDU) error {
	w.mu.Lock()
	if w.closed {
		err := w.werr
		w.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return err
	}
	b, err := p.Append(w.pending)
	if err == nil {
		w.pending = b
		w.queued++
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop writes batches until the wire closes; a write error closes it.
func (w *wire) writeLoop() {
	defer close(w.done)
	for range w.kick {
		w.mu.Lock()
		b, n := w.pending, w.queued
		w.pending, w.queued = w.spare[:0], 0
		closed := w.closed
		w.mu.Unlock()
		if len(b) > 0 {
			if _, err := w.nc.Write(b); err != nil {
				w.close(fmt.Errorf("smpp: write: %w", err))
				return
			}
			if w.onWrite != nil {
				w.onWrite(n, len(b))
			}
		}
		w.mu.Lock()
		w.spare = b
		w.mu.Unlock()
		if closed {
			return
		}
	}
}

// flushClose writes what is queued, then closes: the last word of an unbind gets out.
func (w *wire) flushClose() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	<-w.done
	_ = w.nc.Close()
}

// close drops the connection at once, with err as the reason later sends see.
func (w *wire) close(err error) {
	w.mu.Lock()
	if !w.closed {
		w.closed, w.werr = true, err
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	_ = w.nc.Close()
}

// read returns the next PDU's octets, valid until the next read. The buffer grows only with
// octets that arrived, so a hostile command_length costs no more than what the peer sends.
func (w *wire) read() ([]byte, error) {
	hdr, err := w.br.Peek(HeaderLen)
	if err != nil {
		return nil, err
	}
	h, err := PeekHeader(hdr)
	if err != nil {
		return nil, err
	}
	n := int(h.Length)
	if n <= w.br.Size() {
		if w.rb, err = w.br.Peek(n); err == nil {
			_, _ = w.br.Discard(n)
			return w.rb, nil
		}
		if !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, io.ErrUnexpectedEOF
	}
	buf := make([]byte, 0, 4096) // doubled as octets come in, up to n
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(n, 2*cap(buf))-cap(buf))...)[:len(buf)]
		}
		k, err := w.br.Read(buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+k]
		if err != nil && len(buf) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
