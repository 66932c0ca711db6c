package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/memory"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/secret"
	"github.com/clientele/clientele/projections/projectors"
)

func TestMain(m *testing.M) {
	// Cheap hashes: the tests hash many passwords at once.
	secret.PasswordParams = &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	os.Exit(pgtest.Main(m))
}

// adapters returns a fresh store of every adapter the commands must work
// on; the PostgreSQL one runs the inline projectors too, as in production.
func adapters() map[string]func(t *testing.T) eventstore.Store {
	return map[string]func(t *testing.T) eventstore.Store{
		"memory": func(*testing.T) eventstore.Store { return memory.New() },
		"postgres": func(t *testing.T) eventstore.Store {
			return postgres.New(pgtest.NewPool(t), projectors.InlineHook())
		},
	}
}

var now = time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)

func newCommands(t *testing.T) (commands.Commands, *memory.Store) {
	t.Helper()
	store := memory.New()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	return commands.New(store, func() time.Time { return now }, commands.WithSealer(kr)), store
}

func mustCompany(t *testing.T, cmds commands.Commands, slug string, domains ...string) company.Company {
	t.Helper()
	c, err := cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{
		Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug, Domains: domains},
	})
	if err != nil {
		t.Fatalf("CreateCompany(%s): %v", slug, err)
	}
	return c
}

func TestCreateCompany(t *testing.T) {
	cmds, store := newCommands(t)
	ctx := commands.WithRequest(context.Background(), "cli", "corr-1")
	c, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{
		Principal: access.System(""), Slug: "acme",
		Settings: company.Settings{Name: "Acme", Timezone: "Europe/Helsinki", Currency: "EUR", Domains: []string{"Shop.Acme.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ID) != 32 || c.Slug != "acme" || c.ShortName != "ACME" || c.Domains[0] != "shop.acme.com" || !c.CreatedAt.Equal(now) {
		t.Errorf("company %+v", c)
	}
	evs, err := store.ReadStream(context.Background(), company.Stream(c.ID), 0)
	if err != nil || len(evs) != 1 || evs[0].Type != company.CreatedType {
		t.Fatalf("company stream: %v %v", evs, err)
	}
	want := eventstore.Metadata{CompanyID: c.ID, Actor: "system", Source: "cli", CorrelationID: "corr-1"}
	if diff := cmp.Diff(want, evs[0].Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}

	_, err = cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{
		Principal: access.Principal{CompanyID: c.ID, UserID: "u", Roles: []access.Role{access.RoleSuperuser}}, Slug: "other", Settings: company.Settings{Name: "x"},
	})
	if domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("a user creating a company: %v, want forbidden", err)
	}
	_, err = cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{Principal: access.System(""), Slug: "-bad", Settings: company.Settings{Name: "x"}})
	if domain.ErrorCode(err) != domain.Validation {
		t.Errorf("bad slug: %v, want validation", err)
	}
	_, err = cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{Principal: access.System(""), Slug: "other", Settings: company.Settings{Name: "x", Domains: []string{"shop.acme.com"}}})
	if domain.ErrorCode(err) != domain.Conflict {
		t.Errorf("taken domain: %v, want conflict", err)
	}
	_, err = cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{Principal: access.System(""), Slug: "ACME", Settings: company.Settings{Name: "x"}})
	if domain.ErrorCode(err) != domain.Conflict || domain.ErrorMessage(err) != "company slug already taken" {
		t.Errorf("taken slug: %v, want conflict", err)
	}
	_, err = cmds.CreateIntegration.Handle(context.Background(), commands.CreateIntegration{Principal: access.System("nope"), Name: "x"})
	if domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("integration of an unknown company: %v, want not found", err)
	}
}

func TestCreateCompanyDuplicateSlugConcurrently(t *testing.T) {
	for name, newStore := range adapters() {
		t.Run(name, func(t *testing.T) {
			cmds := commands.New(newStore(t), time.Now)
			const n = 8
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					_, errs[i] = cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{
						Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "Acme"},
					})
				})
			}
			close(start)
			wg.Wait()
			checkOneWinner(t, errs, "company slug already taken")
		})
	}
}

// checkOneWinner checks that exactly one of errs is nil and the others are
// Conflicts with message.
func checkOneWinner(t *testing.T, errs []error, message string) {
	t.Helper()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case domain.ErrorCode(err) != domain.Conflict || !strings.Contains(domain.ErrorMessage(err), message):
			t.Errorf("error %v, want a conflict %q", err, message)
		}
	}
	if ok != 1 {
		t.Errorf("%d successes, want 1", ok)
	}
}

func TestUpdateCompanySettings(t *testing.T) {
	cmds, _ := newCommands(t)
	a := mustCompany(t, cmds, "a", "shop.a.com")
	b := mustCompany(t, cmds, "b")
	ctx := context.Background()

	cur := "sek"
	got, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(a.ID), CompanyID: a.ID, Change: company.SettingsChange{Currency: &cur},
	})
	if err != nil || got.Currency != "SEK" || got.Name != "a" || got.Domains[0] != "shop.a.com" {
		t.Fatalf("update: %+v %v", got, err)
	}

	// b cannot take a's domain until a releases it.
	taken := []string{"shop.a.com"}
	_, err = cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(b.ID), CompanyID: b.ID, Change: company.SettingsChange{Domains: &taken},
	})
	if domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("taking a's domain: %v, want conflict", err)
	}
	none := []string{}
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(a.ID), CompanyID: a.ID, Change: company.SettingsChange{Domains: &none},
	}); err != nil {
		t.Fatal(err)
	}
	got, err = cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(b.ID), CompanyID: b.ID, Change: company.SettingsChange{Domains: &taken},
	})
	if err != nil || len(got.Domains) != 1 {
		t.Fatalf("taking a released domain: %+v %v", got, err)
	}

	// Admins of the company only.
	admin := access.Principal{CompanyID: a.ID, UserID: "u1", Roles: []access.Role{access.RoleAdmin}}
	staff := access.Principal{CompanyID: a.ID, UserID: "u2", Roles: []access.Role{access.RoleStaff}}
	name := "A Oy"
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{Principal: admin, CompanyID: a.ID, Change: company.SettingsChange{Name: &name}}); err != nil {
		t.Errorf("admin: %v", err)
	}
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{Principal: staff, CompanyID: a.ID, Change: company.SettingsChange{Name: &name}}); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("staff: %v, want forbidden", err)
	}
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{Principal: admin, CompanyID: b.ID, Change: company.SettingsChange{Name: &name}}); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("admin of another company: %v, want not found", err)
	}
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{Principal: access.System("nope"), CompanyID: "nope", Change: company.SettingsChange{Name: &name}}); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("unknown company: %v, want not found", err)
	}
}

func TestUpdateCompanySettingsConcurrently(t *testing.T) {
	cmds, store := newCommands(t)
	a := mustCompany(t, cmds, "a")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, tz := range []string{"Europe/Helsinki", "Europe/Oslo", "Asia/Tokyo"} {
		wg.Go(func() {
			_, errs[i] = cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
				Principal: access.System(a.ID), CompanyID: a.ID, Change: company.SettingsChange{Timezone: &tz},
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("update: %v", err)
		}
	}
	evs, _ := store.ReadStream(context.Background(), company.Stream(a.ID), 0)
	if len(evs) != 4 {
		t.Errorf("%d events, want 4", len(evs))
	}
}

func TestCreateUser(t *testing.T) {
	cmds, store := newCommands(t)
	a := mustCompany(t, cmds, "acme")
	ctx := context.Background()
	got, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{
		Principal: access.System(a.ID), Email: "Ann@Example.com", Password: "correct horse battery", Roles: []access.Role{access.RoleAdmin}, TOTP: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.User.Email != "ann@example.com" || got.TOTPSecret == "" || !strings.HasPrefix(got.TOTPURI, "otpauth://totp/Clientele:") || got.User.TOTPSecret != got.TOTPSecret {
		t.Errorf("created %+v", got)
	}
	if !secret.CheckPassword("correct horse battery", got.User.PasswordHash) {
		t.Error("the hash does not match the password")
	}
	evs, _ := store.ReadStream(ctx, access.UserStream(a.ID, got.User.ID), 0)
	if len(evs) != 1 || strings.Contains(string(evs[0].Data), "correct horse") {
		t.Errorf("user events %v", evs)
	}

	for name, cmd := range map[string]commands.CreateUser{
		"short password": {Principal: access.System(a.ID), Email: "b@example.com", Password: "short"},
		"bad email":      {Principal: access.System(a.ID), Email: "b@", Password: "long enough pass"},
	} {
		if _, err := cmds.CreateUser.Handle(ctx, cmd); domain.ErrorCode(err) != domain.Validation {
			t.Errorf("%s: %v, want validation", name, err)
		}
	}
	if _, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System("nope"), Email: "b@example.com", Password: "long enough pass"}); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("unknown company: %v, want not found", err)
	}
	staff := access.Principal{CompanyID: a.ID, UserID: got.User.ID, Roles: []access.Role{access.RoleStaff}}
	if _, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: staff, Email: "b@example.com", Password: "long enough pass"}); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("staff: %v, want forbidden", err)
	}
	// The same email in another company is fine.
	b := mustCompany(t, cmds, "other")
	if _, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(b.ID), Email: "ann@example.com", Password: "long enough pass"}); err != nil {
		t.Errorf("same email, other company: %v", err)
	}
}

func TestCreateUserDuplicateEmailConcurrently(t *testing.T) {
	for name, newStore := range adapters() {
		t.Run(name, func(t *testing.T) {
			cmds := commands.New(newStore(t), time.Now)
			a := mustCompany(t, cmds, "acme")
			const n = 6
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					email := "ann@example.com"
					if i%2 == 1 {
						email = "ANN@example.com"
					}
					_, errs[i] = cmds.CreateUser.Handle(context.Background(), commands.CreateUser{
						Principal: access.System(a.ID), Email: email, Password: "long enough pass",
					})
				})
			}
			close(start)
			wg.Wait()
			checkOneWinner(t, errs, "already exists")
		})
	}
}

func TestClaimDomainConcurrently(t *testing.T) {
	for name, newStore := range adapters() {
		t.Run(name, func(t *testing.T) {
			cmds := commands.New(newStore(t), time.Now)
			const n = 4
			ids := make([]string, n)
			for i := range n {
				ids[i] = mustCompany(t, cmds, fmt.Sprintf("c%d", i)).ID
			}
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					d := []string{"shop.example.com"}
					_, errs[i] = cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
						Principal: access.System(ids[i]), CompanyID: ids[i], Change: company.SettingsChange{Domains: &d},
					})
				})
			}
			close(start)
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case domain.ErrorCode(err) != domain.Conflict:
					t.Errorf("error %v, want a conflict", err)
				}
			}
			if ok != 1 {
				t.Errorf("%d companies got the domain, want 1", ok)
			}
		})
	}
}

func TestCreateIntegrationAndToken(t *testing.T) {
	cmds, store := newCommands(t)
	a := mustCompany(t, cmds, "acme")
	ctx := context.Background()
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(a.ID), Email: "ann@example.com", Password: "long enough pass", Roles: []access.Role{access.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	admin := u.User.Principal()
	admin.Password = true

	i, err := cmds.CreateIntegration.Handle(ctx, commands.CreateIntegration{Principal: admin, IntegrationName: "magento", Name: "Web shop", Description: "d"})
	if err != nil {
		t.Fatal(err)
	}
	want := access.Integration{ID: i.ID, CompanyID: a.ID, Name: "Web shop", IntegrationName: "magento", Description: "d", Enabled: true, CreatedAt: now, CreatedBy: "users/" + u.User.ID}
	if diff := cmp.Diff(want, i); diff != "" {
		t.Errorf("integration (-want +got):\n%s", diff)
	}

	tok, value, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{
		Principal: admin, Name: "shop", OwnerID: "integrations/" + i.ID,
		Scopes: []access.Scope{{Method: "get", Path: "/api/datatargets/7/retrieve/"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !access.LooksLikeToken(value) || tok.Hint != access.TokenHint(value) || tok.OwnerID != "integrations/"+i.ID ||
		len(tok.TransferredRoles) != 0 || tok.TransferredRoles == nil || tok.Scopes[0].Method != "GET" || tok.CreatedBy != "users/"+u.User.ID {
		t.Errorf("token %+v", tok)
	}
	evs, _ := store.ReadStream(ctx, access.TokenStream(a.ID, tok.ID), 0)
	if len(evs) != 1 {
		t.Fatalf("token events %v", evs)
	}
	if strings.Contains(string(evs[0].Data), value) {
		t.Error("the token value is in the event")
	}
	var ev access.AccessTokenCreated
	if err := json.Unmarshal(evs[0].Data, &ev); err != nil || ev.TokenHash != secret.HashToken(value) {
		t.Errorf("event %+v %v", ev, err)
	}
	if m := evs[0].Metadata; m.Actor != "users/"+u.User.ID || m.Source != "api" || m.CompanyID != a.ID || m.CorrelationID == "" {
		t.Errorf("metadata %+v", m)
	}

	// Own token, no body.
	own, _, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: admin})
	if err != nil || own.OwnerID != "users/"+u.User.ID || len(own.TransferredRoles) != 1 {
		t.Errorf("own token %+v %v", own, err)
	}
	// Unknown owners.
	for _, owner := range []string{"integrations/nope", "users/nope"} {
		_, _, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: access.System(a.ID), OwnerID: owner})
		if domain.ErrorCode(err) != domain.Validation {
			t.Errorf("owner %s: %v, want validation", owner, err)
		}
	}
	// An integration of another company is unknown here.
	b := mustCompany(t, cmds, "other")
	_, _, err = cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: access.System(b.ID), OwnerID: "integrations/" + i.ID})
	if domain.ErrorCode(err) != domain.Validation {
		t.Errorf("integration of another company: %v, want validation", err)
	}
	// Staff may not create integrations or their tokens.
	staff := access.Principal{CompanyID: a.ID, UserID: "u2", OwnerID: "users/u2", Roles: []access.Role{access.RoleStaff}}
	if _, err := cmds.CreateIntegration.Handle(ctx, commands.CreateIntegration{Principal: staff, Name: "x"}); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("staff integration: %v", err)
	}
	if _, _, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: staff, OwnerID: "integrations/" + i.ID}); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("staff integration token: %v", err)
	}
}

func TestNewHandlersPanicOnNil(t *testing.T) {
	clock := func() time.Time { return now }
	for name, f := range map[string]func(){
		"CreateCompany":         func() { commands.NewCreateCompanyHandler(nil, clock) },
		"UpdateCompanySettings": func() { commands.NewUpdateCompanySettingsHandler(memory.New(), nil) },
		"CreateUser":            func() { commands.NewCreateUserHandler(nil, clock) },
		"CreateIntegration":     func() { commands.NewCreateIntegrationHandler(nil, clock) },
		"CreateAccessToken":     func() { commands.NewCreateAccessTokenHandler(nil, clock) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New%sHandler did not panic", name)
				}
			}()
			f()
		}()
	}
}
