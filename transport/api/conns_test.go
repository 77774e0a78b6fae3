package api

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A connection that has sent nothing holds no request: a shutdown closes it instead of
// waiting for it (it waited up to ReadTimeout, past the shutdown's deadline, and the engine
// was then never drained). A request half sent when the shutdown starts is still answered.
func TestShutdownClosesSilentConnections(t *testing.T) {
	f := NewFront(0, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.Serve(ln) }()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	silent := dial()
	half := dial()
	if _, err := half.Write([]byte("GET /healthz HTTP/1.1\r\nHost: tuma\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * silentAge) // both accepted; the silent one for longer than silentAge

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f.Shutdown(ctx) }()
	time.Sleep(300 * time.Millisecond)
	if _, err := half.Write([]byte("\r\n")); err != nil {
		t.Fatalf("finish the half-sent request: %v", err)
	}
	_ = half.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(half), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("the request half sent at shutdown got %v, %v; want 200", resp, err)
	}
	if err := <-done; err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("shutdown with a silent connection open = %v after %s; want nil at once", err, time.Since(start))
	}
	_ = silent.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := silent.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the silent connection is still open after the shutdown (read %d, %v)", n, err)
	}
}
