package authn_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pquerna/otp/totp"

	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/secret"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/readmodels"
)

func TestMain(m *testing.M) {
	secret.PasswordParams = &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	os.Exit(pgtest.Main(m))
}

// setup returns a fresh database with an event store that runs the inline
// projectors (users, tokens, integrations) in its append transaction, and
// the commands on it.
func setup(t *testing.T) (*pgxpool.Pool, commands.Commands) {
	t.Helper()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projectors.InlineHook())
	return pool, commands.New(store, time.Now)
}

func mustCompany(t *testing.T, cmds commands.Commands, slug string) company.Company {
	t.Helper()
	c, err := cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{
		Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug},
	})
	if err != nil {
		t.Fatalf("CreateCompany(%s): %v", slug, err)
	}
	return c
}

func TestAuthenticateToken(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	a := mustCompany(t, cmds, "acme")
	b := mustCompany(t, cmds, "beta")
	q := readmodels.NewAccess(pool)
	auth := authn.New(pool, q)

	admin := access.System(a.ID)
	i, err := cmds.CreateIntegration.Handle(ctx, commands.CreateIntegration{Principal: admin, Name: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	scopes := []access.Scope{{Method: "GET", Path: "/api/datatargets/7/retrieve/"}}
	tok, value, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{
		Principal: access.Principal{CompanyID: a.ID, UserID: "u1", OwnerID: "users/u1", Roles: []access.Role{access.RoleAdmin}},
		Name:      "erp", OwnerID: "integrations/" + i.ID, Scopes: scopes, TransferPrivileges: true,
	})
	if err != nil {
		t.Fatal(err)
	}

	p, err := auth.AuthenticateToken(ctx, a.ID, value)
	if err != nil {
		t.Fatal(err)
	}
	want := access.Principal{CompanyID: a.ID, TokenID: tok.ID, OwnerID: "integrations/" + i.ID, Roles: []access.Role{access.RoleAdmin}, Scopes: scopes}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct{ company, token string }{
		"other company": {b.ID, value},
		"unknown token": {a.ID, access.NewTokenValue()},
		"garbage":       {a.ID, "not a token"},
		"empty":         {a.ID, ""},
	} {
		_, err := auth.AuthenticateToken(ctx, tc.company, tc.token)
		if domain.ErrorCode(err) != domain.Unauthorized || domain.ErrorMessage(err) != "invalid access token" {
			t.Errorf("%s: %v, want the one unauthorized answer", name, err)
		}
	}

	got, err := q.AccessToken(ctx, a.ID, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tok, got); diff != "" {
		t.Errorf("AccessToken (-want +got):\n%s", diff)
	}
	if _, err := q.AccessToken(ctx, b.ID, tok.ID); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("AccessToken of another company: %v", err)
	}

	// Only the hash is stored: the value appears nowhere in the database.
	for _, table := range []string{"events", "access_tokens", "streams", "watermill_commits"} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0`, value).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("the token value is in %d rows of %s", n, table)
		}
	}
	var hint string
	if err := pool.QueryRow(ctx, `SELECT hint FROM access_tokens WHERE id = $1`, tok.ID).Scan(&hint); err != nil || hint != access.TokenHint(value) || strings.Count(hint, "*") != 28 {
		t.Errorf("hint %q, %v", hint, err)
	}
}

func TestAuthenticatePassword(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	a := mustCompany(t, cmds, "acme")
	b := mustCompany(t, cmds, "beta")
	q := readmodels.NewAccess(pool)
	auth := authn.New(pool, q)
	now := time.Now()
	auth.Now = func() time.Time { return now }

	plain, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(a.ID), Email: "ann@example.com", Password: "correct horse battery", Roles: []access.Role{access.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	twoFactor, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(a.ID), Email: "bob@example.com", Password: "correct horse battery", TOTP: true})
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCode(twoFactor.TOTPSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	wrong := "000000"
	if wrong == code {
		wrong = "111111"
	}

	p, err := auth.AuthenticatePassword(ctx, a.ID, "ANN@example.com", "correct horse battery", "")
	if err != nil {
		t.Fatal(err)
	}
	want := access.Principal{CompanyID: a.ID, UserID: plain.User.ID, OwnerID: "users/" + plain.User.ID, Roles: []access.Role{access.RoleAdmin}, Password: true}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}
	p, err = auth.AuthenticatePassword(ctx, a.ID, "bob@example.com", "correct horse battery", code)
	if err != nil || p.UserID != twoFactor.User.ID || !p.Password || p.Roles[0] != access.RoleStaff {
		t.Errorf("with TOTP: %+v, %v", p, err)
	}
	// The next step's code (the phone's clock is ahead) is accepted once;
	// after it, neither it nor the older code is.
	next, err := totp.GenerateCode(twoFactor.TOTPSecret, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.AuthenticatePassword(ctx, a.ID, "bob@example.com", "correct horse battery", next); err != nil {
		t.Errorf("next step's code: %v", err)
	}

	// Every failure is one answer, whatever failed.
	const message = "invalid email, password or two-factor code (users with two-factor authentication send the current code in the Clientele-TOTP-Code header)"
	tests := []struct {
		name                       string
		company, email, pass, code string
	}{
		{"wrong password", a.ID, "ann@example.com", "wrong password!", ""},
		{"unknown user", a.ID, "nobody@example.com", "correct horse battery", ""},
		{"other company", b.ID, "ann@example.com", "correct horse battery", ""},
		{"missing code", a.ID, "bob@example.com", "correct horse battery", ""},
		{"wrong code", a.ID, "bob@example.com", "correct horse battery", wrong},
		{"code used already", a.ID, "bob@example.com", "correct horse battery", next},
		{"older code than one used", a.ID, "bob@example.com", "correct horse battery", code},
		{"wrong password hides TOTP", a.ID, "bob@example.com", "wrong password!", code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := auth.AuthenticatePassword(ctx, tt.company, tt.email, tt.pass, tt.code)
			if domain.ErrorCode(err) != domain.Unauthorized || domain.ErrorMessage(err) != message {
				t.Errorf("%v, want unauthorized %q", err, message)
			}
		})
	}

	u, err := q.User(ctx, a.ID, twoFactor.User.ID)
	if err != nil || u.TOTPSecret != twoFactor.TOTPSecret || u.Email != "bob@example.com" {
		t.Errorf("User = %+v, %v", u, err)
	}
}

// TestTOTPCodeUsedOnceUnderRace logs in with one code from many
// connections at once, as several nodes would: exactly one succeeds.
func TestTOTPCodeUsedOnceUnderRace(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	a := mustCompany(t, cmds, "acme")
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(a.ID), Email: "bob@example.com", Password: "correct horse battery", TOTP: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	code, err := totp.GenerateCode(u.TOTPSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			auth := authn.New(pool, readmodels.NewAccess(pool)) // one per node
			auth.Now = func() time.Time { return now }
			_, err := auth.AuthenticatePassword(ctx, a.ID, "bob@example.com", "correct horse battery", code)
			errs <- err
		}()
	}
	ok := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case domain.ErrorCode(err) != domain.Unauthorized:
			t.Errorf("unexpected failure: %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d log-ins succeeded with one code, want 1", ok)
	}
}
