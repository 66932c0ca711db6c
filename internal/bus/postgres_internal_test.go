package bus

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// TestEndingSubscriptionIsNoOutage: a query that failed because its
// subscription was ending (context cancelled) is not reported as the
// database being unavailable, and the subscriber does not query again at
// once.
func TestEndingSubscriptionIsNoOutage(t *testing.T) {
	var logs bytes.Buffer
	cfg := PostgresConfig{PollInterval: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg.setDefaults()
	b := newPollBackoff(cfg, "test")
	err := fmt.Errorf("could not begin tx for querying: %w", context.Canceled)
	if wait := b.HandleError(nil, false, err); wait != cfg.PollInterval {
		t.Errorf("wait %v after a cancelled query, want the poll (%v)", wait, cfg.PollInterval)
	}
	if logs.Len() > 0 {
		t.Errorf("a cancelled query was logged: %s", logs.String())
	}
}
