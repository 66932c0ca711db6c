package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

func TestHooks(t *testing.T) {
	errHook := errors.New("hook failed")
	tests := []struct {
		name    string
		hookErr error
	}{
		{"hook succeeds", nil},
		{"hook fails", errHook},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := postgres.New(pgtest.NewPool(t))
			var seen eventstore.Committed
			s.AddHook(eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error {
				// The hook runs in the append transaction: it sees the events.
				var n int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM events WHERE transaction_id = pg_current_xact_id()`).Scan(&n); err != nil {
					return err
				}
				if n != len(c.Events) {
					t.Errorf("hook sees %d events of its commit, want %d", n, len(c.Events))
				}
				seen = c
				return tt.hookErr
			}))
			got, err := s.Append(t.Context(), testCommit("hooked-c1-1"))
			if !errors.Is(err, tt.hookErr) {
				t.Fatalf("Append = %v, want %v", err, tt.hookErr)
			}
			stored, err2 := s.ReadStream(t.Context(), "hooked-c1-1", 0)
			if err2 != nil {
				t.Fatal(err2)
			}
			if err != nil {
				if len(stored) != 0 {
					t.Errorf("a failed hook left %d events", len(stored))
				}
				return
			}
			if diff := cmp.Diff(got, seen, jsonData); diff != "" {
				t.Errorf("hook saw another commit (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got.Events, stored, jsonData); diff != "" {
				t.Errorf("stored events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOneCommitPerTransaction: readers and hooks identify a commit by its
// transaction, so a second commit in one transaction is refused.
func TestOneCommitPerTransaction(t *testing.T) {
	s := postgres.New(pgtest.NewPool(t))
	tx := begin(t, s)
	appendTx(t, s, tx, "first-c1-1")
	if _, err := s.AppendTx(t.Context(), tx, testCommit("second-c1-1")); !errors.Is(err, eventstore.ErrTxHasCommit) {
		t.Fatalf("second AppendTx = %v, want ErrTxHasCommit", err)
	}
}
