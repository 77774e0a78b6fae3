package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// writes records every Write call it receives.
type writes struct {
	mu    sync.Mutex
	calls []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func (w *writes) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.calls...)
}

func logTo(w *LogBuffer) *slog.Logger {
	return NewLogger(Config{LogFormat: "json", LogLevel: slog.LevelInfo}, w)
}

func TestLogBufferWritesLinesTogetherAfterTheDelay(t *testing.T) {
	out := &writes{}
	b := NewLogBuffer(out, 300*time.Millisecond)
	log := logTo(b)
	for i := range 100 {
		log.Info("http request", slog.Int("n", i))
	}
	if got := out.snapshot(); len(got) != 0 {
		t.Fatalf("%d writes before the delay; want lines held", len(got))
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(out.snapshot()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("held lines never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := out.snapshot()
	if len(got) != 1 {
		t.Fatalf("%d writes for 100 lines; want them in one", len(got))
	}
	lines := strings.Split(strings.TrimSuffix(got[0], "\n"), "\n")
	if len(lines) != 100 || !strings.Contains(lines[0], `"n":0`) || !strings.Contains(lines[99], `"n":99`) {
		t.Fatalf("wrote %d lines, first %q; want the 100 in order", len(lines), lines[0])
	}
	// The timer is armed again by the next line.
	log.Info("later")
	for len(out.snapshot()) == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a line after the first flush never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLogBufferWritesWarningsAtOnce(t *testing.T) {
	out := &writes{}
	b := NewLogBuffer(out, time.Hour)
	log := logTo(b).With(slog.String("component", "engine")) // WithAttrs keeps the flushing
	log.Info("before")
	log.Warn("redis unavailable")
	got := out.snapshot()
	if len(got) != 1 {
		t.Fatalf("%d writes after a warning; want the held line and the warning in one", len(got))
	}
	if i, j := strings.Index(got[0], "before"), strings.Index(got[0], "redis unavailable"); i < 0 || j < i {
		t.Fatalf("wrote %q; want the held line, then the warning", got[0])
	}
	logTo(b).WithGroup("g").Error("failed")
	if got := out.snapshot(); len(got) != 2 || !strings.Contains(got[1], "failed") {
		t.Fatalf("an error through WithGroup was held: %q", got)
	}
}

func TestLogBufferWritesWhenFull(t *testing.T) {
	out := &writes{}
	b := NewLogBuffer(out, time.Hour)
	line := bytes.Repeat([]byte("x"), 1000)
	for range logBufferBytes/len(line) + 1 {
		if _, err := b.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.snapshot(); len(got) != 1 || len(got[0]) < logBufferBytes {
		t.Fatalf("writes %d; want one of at least %d bytes once the buffer filled", len(got), logBufferBytes)
	}
}

func TestLogBufferCloseWritesWhatIsHeld(t *testing.T) {
	out := &writes{}
	b := NewLogBuffer(out, time.Hour)
	fmt.Fprint(b, "held\n")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(b, "after\n")
	if got := out.snapshot(); len(got) != 2 || got[0] != "held\n" || got[1] != "after\n" {
		t.Fatalf("writes %q; want the held line at Close, then later lines straight through", got)
	}
}

func TestLogBufferZeroDelayWritesEachLine(t *testing.T) {
	out := &writes{}
	log := logTo(NewLogBuffer(out, 0))
	log.Info("one")
	log.Info("two")
	if got := out.snapshot(); len(got) != 2 {
		t.Fatalf("%d writes; want each line at once with TUMA_LOG_BUFFER=0", len(got))
	}
}

// TestLogBufferConcurrentWriters: lines from many goroutines, flushed by the timer while they
// write, all arrive whole.
func TestLogBufferConcurrentWriters(t *testing.T) {
	out := &writes{}
	b := NewLogBuffer(out, time.Millisecond)
	log := logTo(b)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				log.Info("line", slog.Int("g", g), slog.Int("i", i))
			}
		})
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(out.snapshot(), "")
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines; want %d", len(lines), 8*500)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") || !strings.HasSuffix(l, "}") {
			t.Fatalf("a torn line: %q", l)
		}
	}
}

// BenchmarkAccessLogLine: one access-log record, as the middleware writes it, to a file
// directly (a write system call per line) and through a LogBuffer.
func BenchmarkAccessLogLine(b *testing.B) {
	for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
		b.Run(fmt.Sprintf("buffer=%v", delay), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := NewLogBuffer(f, delay)
			defer buf.Close()
			log := logTo(buf)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.LogAttrs(ctx, slog.LevelInfo, "http request",
						slog.String("request_id", "0b8c2f0e6a1d4c9b"), slog.String("method", "POST"),
						slog.String("route", "/sms/send"), slog.String("path", "/sms/send"), slog.Int("status", 202),
						slog.Float64("duration_ms", 11.337), slog.String("ip", "127.0.0.1"),
						slog.String("account_id", "6f1d2c3b-9a8e-4f7d-b6c5-a4b3c2d1e0f9"))
				}
			})
		})
	}
}
