package commands_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// racing is a store on which another writer gets there first: before
// each commit, the same events are appended to the same streams whatever
// their version, so the commit's expected versions are always stale.
type racing struct{ eventstore.Store }

func (r racing) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	first := c
	first.Streams = slices.Clone(c.Streams)
	for i := range first.Streams {
		first.Streams[i].ExpectedVersion = eventstore.Any
	}
	if _, err := r.Store.Append(ctx, first); err != nil {
		return eventstore.Committed{}, err
	}
	return r.Store.Append(ctx, c)
}

// TestVersionConflictIsConflict: a version conflict that no rule of the
// handler explains comes out of the commands as domain.Conflict, on
// every adapter, with the store's *eventstore.ConflictError kept in the
// chain (the edge maps the code and knows nothing of the store).
func TestVersionConflictIsConflict(t *testing.T) {
	for name, open := range adapters() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			co := mustCompany(t, commands.New(store, time.Now), "acme")
			_, err := commands.New(racing{store}, time.Now).CreateDatatarget.Handle(context.Background(), commands.CreateDatatarget{
				Principal: access.System(co.ID), Type: datatarget.Messages, Name: "orders",
			})
			var c *eventstore.ConflictError
			if domain.ErrorCode(err) != domain.Conflict || !errors.As(err, &c) {
				t.Errorf("create racing another writer: %v, want a conflict", err)
			}
		})
	}
}

// TestDatabaseErrorsAreTyped checks the commands' boundary with the
// store (typedStore) against a real PostgreSQL: text that PostgreSQL
// cannot store or compare (U+0000, invalid UTF-8) is the caller's
// domain.Invalid, and a database that cannot be reached is
// domain.Unavailable.
func TestDatabaseErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	store := adapters()["postgres"](t)
	cmds := commands.New(store, time.Now)
	p, _ := mustDatatarget(t, cmds)
	name := "renamed"
	for _, id := range []string{"a\x00b", "a\xffb"} {
		_, err := cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: p, DatatargetID: id, Patch: datatarget.Patch{Name: &name}})
		if domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("datatarget %q: %v, want invalid_request", id, err)
		}
		err = cmds.RevokeAccessToken.Handle(ctx, commands.RevokeAccessToken{Principal: p, TokenID: id})
		if domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("access token %q: %v, want invalid_request", id, err)
		}
	}

	down := pgtest.UnreachablePool(t)
	cmds = commands.New(postgres.New(down), time.Now)
	_, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{
		Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "Acme"},
	})
	if domain.ErrorCode(err) != domain.Unavailable {
		t.Errorf("create company, database unreachable: %v, want unavailable", err)
	}
	err = cmds.RevokeAccessToken.Handle(ctx, commands.RevokeAccessToken{Principal: p, TokenID: "t1"})
	if domain.ErrorCode(err) != domain.Unavailable {
		t.Errorf("revoke access token, database unreachable: %v, want unavailable", err)
	}
}
