package authn_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/readmodels"
)

// TestRecheck: a principal checked again is the one its credential gives
// now: a token as it was until it is revoked, or until its integration
// is disabled; a user with its roles until it is removed or loses one.
// (No command removes users, changes their roles or disables
// integrations yet; the test changes the read models as one would.)
func TestRecheck(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	a := mustCompany(t, cmds, "acme")
	auth := authn.New(pool, readmodels.NewAccess(pool))
	admin := access.System(a.ID)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: admin, Email: "admin@acme.test",
		Password: "correct horse battery", Roles: []access.Role{access.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	i, err := cmds.CreateIntegration.Handle(ctx, commands.CreateIntegration{Principal: admin, Name: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	token := func(owner string) access.Principal {
		t.Helper()
		_, value, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: admin, OwnerID: owner})
		if err != nil {
			t.Fatal(err)
		}
		p, err := auth.AuthenticateToken(ctx, a.ID, value)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	userTok, integrationTok := token("users/"+u.User.ID), token("integrations/"+i.ID)
	logIn, err := auth.AuthenticatePassword(ctx, a.ID, "admin@acme.test", "correct horse battery", "")
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range []access.Principal{userTok, integrationTok, logIn, access.System(a.ID)} {
		got, err := auth.Recheck(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", p.Actor(), err)
		}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("%s rechecked (-want +got):\n%s", p.Actor(), diff)
		}
	}
	gone := func(what string, p access.Principal) {
		t.Helper()
		if _, err := auth.Recheck(ctx, p); domain.ErrorCode(err) != domain.Unauthorized {
			t.Errorf("%s: %v, want unauthorized", what, err)
		}
	}

	if err := cmds.RevokeAccessToken.Handle(ctx, commands.RevokeAccessToken{Principal: admin, TokenID: userTok.TokenID}); err != nil {
		t.Fatal(err)
	}
	gone("a revoked token", userTok)
	if _, err := pool.Exec(ctx, `UPDATE integrations SET enabled = false WHERE id = $1`, i.ID); err != nil {
		t.Fatal(err)
	}
	gone("a token of a disabled integration", integrationTok)
	if _, err := pool.Exec(ctx, `UPDATE users SET roles = '{staff}' WHERE id = $1`, u.User.ID); err != nil {
		t.Fatal(err)
	}
	gone("a user who lost the admin role", logIn)
	staff := logIn
	staff.Roles = []access.Role{access.RoleStaff}
	if _, err := auth.Recheck(ctx, staff); err != nil {
		t.Errorf("a user with the roles it logged in with: %v", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM users WHERE id = $1`, u.User.ID); err != nil {
		t.Fatal(err)
	}
	gone("a removed user", staff)
	gone("an SFTP key's principal", access.Principal{CompanyID: a.ID, SFTPKeyID: "k1", OwnerID: "sftp-keys/k1"})
}
