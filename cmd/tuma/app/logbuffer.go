package app

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logBufferBytes is how much a LogBuffer holds before it writes without waiting.
const logBufferBytes = 64 << 10

// LogBuffer gathers log lines and writes them together, at most delay after the first of
// them: the access log writes a line per request, and a write system call per line cost more
// than formatting it. Warnings and errors are written at once (see NewLogger), so what an
// operator needs after a crash is on disk; a kill -9 loses at most delay of info lines.
type LogBuffer struct {
	mu    sync.Mutex
	w     io.Writer
	delay time.Duration
	buf   []byte
	timer *time.Timer // armed while buf holds lines
	armed bool
	done  bool
}

// NewLogBuffer buffers writes to w for up to delay; 0 writes every line at once.
func NewLogBuffer(w io.Writer, delay time.Duration) *LogBuffer {
	return &LogBuffer{w: w, delay: delay}
}

// Write takes one log record (slog handlers write each record whole, under their own lock).
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.delay <= 0 || b.done {
		return b.w.Write(p)
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logBufferBytes {
		return len(p), b.flushLocked()
	}
	if !b.armed {
		if b.timer == nil {
			b.timer = time.AfterFunc(b.delay, func() { _ = b.Flush() })
		} else {
			b.timer.Reset(b.delay)
		}
		b.armed = true
	}
	return len(p), nil
}

// Flush writes what is held.
func (b *LogBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *LogBuffer) flushLocked() error {
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	if cap(b.buf) > 4*logBufferBytes {
		b.buf = nil // one burst of huge records need not be held for the life of the process
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// Close writes what is held and makes later writes go straight through.
func (b *LogBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	return b.flushLocked()
}

// flushing writes a record at Warn or above, and everything held before it, at once.
type flushing struct {
	slog.Handler
	buf *LogBuffer
}

func (h flushing) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.buf.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushing) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushing{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushing) WithGroup(name string) slog.Handler {
	return flushing{h.Handler.WithGroup(name), h.buf}
}
