package readmodels_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/readmodels"
)

func TestIntegrations(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	a := mustCompany(t, cmds, "acme")
	b := mustCompany(t, cmds, "beta")
	q := readmodels.NewAccess(pool)
	var created []access.Integration
	for _, name := range []string{"one", "two"} {
		i, err := cmds.CreateIntegration.Handle(ctx, commands.CreateIntegration{Principal: access.System(a.ID), Name: name, IntegrationName: "shop", Description: name + " d"})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, i)
	}
	got, err := q.Integration(ctx, a.ID, created[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created[1], got); diff != "" {
		t.Errorf("Integration (-want +got):\n%s", diff)
	}
	if _, err := q.Integration(ctx, b.ID, created[1].ID); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("Integration of another company: %v", err)
	}
	all, err := q.Integrations(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, all); diff != "" {
		t.Errorf("Integrations (-want +got):\n%s", diff)
	}
	if none, err := q.Integrations(ctx, b.ID); err != nil || len(none) != 0 {
		t.Errorf("Integrations of b = %v, %v", none, err)
	}
}
