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

// TestCommitsFireAfterCommit: the store's commit signal fires once a
// transaction of the store has committed (Append, InTx), and not for one
// that rolled back.
func TestCommitsFireAfterCommit(t *testing.T) {
	ctx := t.Context()
	s := postgres.New(pgtest.NewPool(t))
	if eventstore.CommitsOf(s) != s.Commits() {
		t.Fatal("CommitsOf does not find the store's signal")
	}
	fired := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	c := s.Commits().C()
	errAbort := errors.New("abort")
	if err := s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.AppendTx(ctx, tx, testCommit("rolled-c1-1")); err != nil {
			return err
		}
		return errAbort
	}); !errors.Is(err, errAbort) {
		t.Fatalf("InTx = %v", err)
	}
	if fired(c) {
		t.Fatal("a transaction that rolled back fired the signal")
	}
	if _, err := s.Append(ctx, testCommit("kept-c1-1")); err != nil {
		t.Fatal(err)
	}
	if !fired(c) {
		t.Fatal("Append committed without firing the signal")
	}
	c = s.Commits().C()
	if err := s.InTx(ctx, func(tx pgx.Tx) error {
		_, err := s.AppendTx(ctx, tx, testCommit("intx-c1-1"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !fired(c) {
		t.Fatal("InTx committed without firing the signal")
	}
}
