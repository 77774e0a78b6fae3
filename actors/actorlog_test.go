package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// protoactor's "Automanaged server stopping..!" is an INFO when the server closed with its
// node, and stays an ERROR for any other cause; the wrapped handler's level still decides.
func TestActorLogDowngradesOnlyACleanClose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level
		err   error
		want  string
	}{
		{"clean close", slog.LevelInfo, http.ErrServerClosed, "level=INFO msg=\"cluster health server stopped\""},
		{"clean close, wrapped", slog.LevelInfo, fmt.Errorf("serve: %w", http.ErrServerClosed), "level=INFO"},
		{"clean close below the level", slog.LevelWarn, http.ErrServerClosed, ""},
		{"a real failure", slog.LevelWarn, errors.New("listen tcp: address already in use"), "level=ERROR msg=\"Automanaged server stopping..!\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(actorLog{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})}).With("component", "actors")
			log.Error("Automanaged server stopping..!", slog.Any("error", tc.err))
			got := buf.String()
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("logged %q; want %q", got, tc.want)
			}
			if got != "" && !strings.Contains(got, "component=actors") {
				t.Errorf("logged %q without the logger's attributes", got)
			}
		})
	}
	var buf bytes.Buffer
	slog.New(actorLog{slog.NewTextHandler(&buf, nil)}).ErrorContext(context.Background(), "other", slog.Any("error", http.ErrServerClosed))
	if !strings.Contains(buf.String(), "level=ERROR msg=other") {
		t.Errorf("logged %q; want another message's ERROR kept", buf.String())
	}
}
