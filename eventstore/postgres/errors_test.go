package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestOutageIsUnavailable checks that the adapter returns the port's
// error for a database it cannot reach, as the esdb adapter does for
// EventStoreDB, and leaves the caller's own cancellation as it is.
func TestOutageIsUnavailable(t *testing.T) {
	pool := pgtest.NewPool(t)
	s := postgres.New(pool)
	pool.Close()
	ctx := t.Context()
	if _, err := s.Append(ctx, testCommit("away-c1-1")); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("Append on a closed pool: %v, want eventstore.ErrUnavailable", err)
	}
	if _, err := s.ReadLog(ctx, eventstore.Position{}, 10); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("ReadLog on a closed pool: %v, want eventstore.ErrUnavailable", err)
	}
	if _, err := s.Head(ctx); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("Head on a closed pool: %v, want eventstore.ErrUnavailable", err)
	}
	if _, _, err := s.ReadCommitTypes(ctx, 1, []string{"Happened"}); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("ReadCommitTypes on a closed pool: %v, want eventstore.ErrUnavailable", err)
	}
	if err := s.EachCompanyEvent(ctx, "c1", eventstore.Position{}, eventstore.Position{TxID: 1 << 40}, func(eventstore.RecordedEvent) error { return nil }); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("EachCompanyEvent on a closed pool: %v, want eventstore.ErrUnavailable", err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := postgres.New(pgtest.NewPool(t)).ReadStream(cancelled, "away-c1-1", 0); !errors.Is(err, context.Canceled) || errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("ReadStream cancelled: %v, want context.Canceled and not eventstore.ErrUnavailable", err)
	}
}
