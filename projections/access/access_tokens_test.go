package access_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

func TestAccessProjectors(t *testing.T) {
	pool := projectiontest.PgtestPool(t)
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 123456000, time.UTC)
	user := access.User{ID: "u1", Email: "ann@example.com", Roles: []access.Role{access.RoleAdmin, access.RoleStaff}, PasswordHash: "$argon2id$x", TOTPSecret: "ABC", CreatedAt: t0}
	integ := access.Integration{ID: "i1", Name: "Shop", IntegrationName: "magento", Description: "d", Enabled: true, CreatedAt: t0, CreatedBy: "users/u1"}
	tok := access.AccessToken{ID: "t1", OwnerID: "integrations/i1", Hint: "clt_****abcd", Name: "n", CreatedBy: "users/u1", CreatedAt: t0,
		TransferredRoles: []access.Role{}, Scopes: []access.Scope{{Method: "GET", Path: "/api/datatargets/7/retrieve/"}}}
	tok2 := access.AccessToken{ID: "t2", OwnerID: "users/u1", Hint: "h", CreatedBy: "users/u1", CreatedAt: t0, TransferredRoles: []access.Role{access.RoleAdmin}}
	events := []any{
		access.NewUserCreated(user), access.NewIntegrationCreated(integ),
		access.NewAccessTokenCreated(tok, "hash1"), access.NewAccessTokenCreated(tok2, "hash2"),
	}
	types := []string{access.UserCreatedType, access.IntegrationCreatedType, access.AccessTokenCreatedType, access.AccessTokenCreatedType}
	for i, e := range events {
		projectiontest.ApplyInline(t, pool, projectiontest.Recorded(t, "c1", types[i], e))
	}
	// Applying again changes nothing (a replay of the same commit).
	projectiontest.ApplyInline(t, pool, projectiontest.Recorded(t, "c1", types[0], events[0]), projectiontest.Recorded(t, "c1", types[2], events[2]))

	var u access.User
	var roles []string
	if err := pool.QueryRow(ctx, `SELECT company_id, id, email, roles, password_hash, totp_secret, created_at FROM users`).
		Scan(&u.CompanyID, &u.ID, &u.Email, &roles, &u.PasswordHash, &u.TOTPSecret, &u.CreatedAt); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		u.Roles = append(u.Roles, access.Role(r))
	}
	u.CreatedAt = u.CreatedAt.UTC()
	user.CompanyID = "c1"
	if diff := cmp.Diff(user, u); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}

	var i access.Integration
	if err := pool.QueryRow(ctx, `SELECT company_id, id, name, integration_name, description, enabled, created_at, created_by FROM integrations`).
		Scan(&i.CompanyID, &i.ID, &i.Name, &i.IntegrationName, &i.Description, &i.Enabled, &i.CreatedAt, &i.CreatedBy); err != nil {
		t.Fatal(err)
	}
	i.CreatedAt = i.CreatedAt.UTC()
	integ.CompanyID = "c1"
	if diff := cmp.Diff(integ, i); diff != "" {
		t.Errorf("integration (-want +got):\n%s", diff)
	}

	rows, err := pool.Query(ctx, `SELECT id, token_hash, owner_id, transferred_roles, scopes FROM access_tokens ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type tokenRow struct {
		ID, Hash, Owner string
		Roles           []string
		Scopes          []access.Scope
	}
	var got []tokenRow
	for rows.Next() {
		var r tokenRow
		var scopes []byte
		if err := rows.Scan(&r.ID, &r.Hash, &r.Owner, &r.Roles, &scopes); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(scopes, &r.Scopes); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []tokenRow{
		{ID: "t1", Hash: "hash1", Owner: "integrations/i1", Roles: []string{}, Scopes: []access.Scope{{Method: "GET", Path: "/api/datatargets/7/retrieve/"}}},
		{ID: "t2", Hash: "hash2", Owner: "users/u1", Roles: []string{"admin"}, Scopes: []access.Scope{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
}
