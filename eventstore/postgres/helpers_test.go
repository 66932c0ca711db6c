package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
)

func begin(t *testing.T, s *postgres.Store) pgx.Tx {
	t.Helper()
	tx, err := s.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func testCommit(streamID string) eventstore.Commit {
	evs := []eventstore.Event{
		{Type: "Happened", Data: json.RawMessage(`{"n": 1}`)},
		{Type: "Happened", Data: json.RawMessage(`{"n": 2}`)},
		{Type: "Happened", Data: json.RawMessage(`{"n": 3}`)},
	}
	return eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: "c1"},
		Streams:  []eventstore.StreamAppend{{StreamID: streamID, ExpectedVersion: eventstore.NoStream, Events: evs}},
	}
}

func appendTx(t *testing.T, s *postgres.Store, tx pgx.Tx, streamID string) eventstore.Committed {
	t.Helper()
	c, err := s.AppendTx(t.Context(), tx, testCommit(streamID))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustAppend(t *testing.T, s *postgres.Store, streamID string) eventstore.Committed {
	t.Helper()
	c, err := s.Append(t.Context(), testCommit(streamID))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// jsonData compares data as JSON values: jsonb reformats the bytes.
var jsonData = cmp.Comparer(func(a, b json.RawMessage) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && cmp.Equal(va, vb)
})
