package bus_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestLoggerCancelsAtDebug: the error Watermill reports when a
// subscription ends with a query in flight (a real query cancelled, as
// pgx reports it) is logged at debug level, not as an error; any other
// error still is one.
func TestLoggerCancelsAtDebug(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	_, cancelled := conn.Exec(ctx, "SELECT 1")
	if !errors.Is(cancelled, context.Canceled) {
		t.Fatalf("a query of a cancelled context failed with %v, not a cancellation", cancelled)
	}

	var logs bytes.Buffer
	logger := bus.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))).
		With(watermill.LogFields{"consumer_group": "customers"})
	logger.Error("could not commit tx for querying message", cancelled, nil)
	if got := logs.String(); !strings.Contains(got, "level=DEBUG") || strings.Contains(got, "level=ERROR") ||
		!strings.Contains(got, "consumer_group=customers") {
		t.Errorf("a cancelled query logged as %q, want at debug level with its fields", got)
	}
	logs.Reset()
	logger.Error("could not commit tx for querying message", errors.New("connection reset by peer"), nil)
	if got := logs.String(); !strings.Contains(got, "level=ERROR") {
		t.Errorf("another error logged as %q, want an error", got)
	}
}
