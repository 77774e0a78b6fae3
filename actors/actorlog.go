package actors

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
)

// actorLog is protoactor's logger: the engine's, except that the cluster provider's health
// server closing with its node is not an error. protoactor logs "Automanaged server
// stopping..!" at ERROR on every clean stop of a cluster node, which pages nobody useful;
// any other error it reports stays an error.
type actorLog struct{ slog.Handler }

// providerStopped is what protoactor's automanaged provider logs when its server returns.
const providerStopped = "Automanaged server stopping..!"

func (h actorLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && r.Message == providerStopped && closedCleanly(r) {
		if !h.Handler.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		r = slog.NewRecord(r.Time, slog.LevelInfo, "cluster health server stopped", r.PC)
	}
	return h.Handler.Handle(ctx, r)
}

func (h actorLog) WithAttrs(as []slog.Attr) slog.Handler { return actorLog{h.Handler.WithAttrs(as)} }
func (h actorLog) WithGroup(name string) slog.Handler    { return actorLog{h.Handler.WithGroup(name)} }

// closedCleanly reports a record whose first error attribute (protoactor's line has one) is
// http.ErrServerClosed.
func closedCleanly(r slog.Record) bool {
	clean := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			clean = errors.Is(err, http.ErrServerClosed)
			return false
		}
		return true
	})
	return clean
}
