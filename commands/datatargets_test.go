package commands_test

import (
	"context"
	"testing"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

func TestUpdateDatatarget(t *testing.T) {
	cmds, store := newCommands(t)
	p, d := mustDatatarget(t, cmds)
	ctx := context.Background()
	name := "renamed"
	got, err := cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: p, DatatargetID: d.ID, Patch: datatarget.Patch{Name: &name}})
	if err != nil || got.Name != "renamed" {
		t.Fatalf("update: %+v %v", got, err)
	}
	// Nothing changes: nothing is appended.
	if _, err := cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: p, DatatargetID: d.ID, Patch: datatarget.Patch{Name: &name}}); err != nil {
		t.Fatal(err)
	}
	evs, _ := store.ReadStream(ctx, datatarget.Stream(p.CompanyID, d.ID), 0)
	if len(evs) != 2 {
		t.Errorf("%d events, want created and one update", len(evs))
	}
	_, err = cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: p, DatatargetID: "nope", Patch: datatarget.Patch{Name: &name}})
	if domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("unknown datatarget: %v", err)
	}
}

func TestOutletLifecycle(t *testing.T) {
	cmds, store := newCommands(t)
	p, d := mustDatatarget(t, cmds)
	ctx := context.Background()
	spec := datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "https://example.com/"}}
	o, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: d.ID, Spec: spec})
	if err != nil || !o.Enabled || o.DatatargetID != d.ID {
		t.Fatalf("create outlet: %+v %v", o, err)
	}
	if _, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: "nope", Spec: spec}); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("outlet of an unknown datatarget: %v", err)
	}
	role := access.Principal{CompanyID: p.CompanyID, TokenID: "t"}
	if _, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: role, DatatargetID: d.ID, Spec: spec}); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("outlet by a token without roles: %v", err)
	}
	for range 2 { // the second time is a no-op
		if err := cmds.DisableOutlet.BySystem(ctx, p.CompanyID, d.ID, o.ID, "gone"); err != nil {
			t.Fatal(err)
		}
	}
	evs, _ := store.ReadStream(ctx, datatarget.OutletStream(p.CompanyID, o.ID), 0)
	if len(evs) != 2 || evs[1].Type != datatarget.OutletDisabledType || evs[1].Metadata.Source != "system" {
		t.Errorf("outlet stream %+v", evs)
	}
	if err := cmds.DisableOutlet.BySystem(ctx, p.CompanyID, "other", o.ID, "x"); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("outlet under the wrong datatarget: %v", err)
	}
}
