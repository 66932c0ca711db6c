package projections_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
)

// applyInline applies events with every inline projector in one
// transaction, as a rebuild page or an append would.
func applyInline(t *testing.T, pool *pgxpool.Pool, events ...eventstore.RecordedEvent) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, p := range projections.Inline() {
			if err := p.Apply(ctx, tx, events); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// recorded returns a recorded event of company with data encoded.
func recorded(t *testing.T, companyID, typ string, data any) eventstore.RecordedEvent {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.RecordedEvent{StreamID: typ + "-" + companyID, StreamVersion: 1, Type: typ, Data: b, Metadata: eventstore.Metadata{CompanyID: companyID}}
}

func TestInlineNamesAndTables(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range projections.Inline() {
		if seen[p.Name()] {
			t.Errorf("projector name %s twice", p.Name())
		}
		seen[p.Name()] = true
		if len(p.Tables()) == 0 {
			t.Errorf("%s owns no table", p.Name())
		}
	}
	for _, name := range []string{"companies", "users", "integrations", "access_tokens"} {
		if !seen[name] {
			t.Errorf("no inline projector %s", name)
		}
	}
}

func TestInlineIgnoresOtherEvents(t *testing.T) {
	pool := pgtestPool(t)
	applyInline(t, pool, recorded(t, "c1", "SomethingElse", map[string]any{"x": 1}))
}
