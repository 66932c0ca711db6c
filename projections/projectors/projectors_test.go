package projectors_test

import (
	"testing"

	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/projectors"
)

func TestInlineNamesAndTables(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range projectors.Inline() {
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
	pool := projectiontest.PgtestPool(t)
	projectiontest.ApplyInline(t, pool, projectiontest.Recorded(t, "c1", "SomethingElse", map[string]any{"x": 1}))
}
