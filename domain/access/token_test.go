package access_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

func TestNewTokenValue(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		v := access.NewTokenValue()
		if len(v) != 36 || !strings.HasPrefix(v, "clt_") || !access.LooksLikeToken(v) {
			t.Fatalf("NewTokenValue() = %q", v)
		}
		if seen[v] {
			t.Fatalf("NewTokenValue() repeated %q", v)
		}
		seen[v] = true
	}
	for _, bad := range []string{"", "clt_short", "xyz_" + strings.Repeat("a", 32), "clt_" + strings.Repeat("-", 32), "clt_" + strings.Repeat("a", 33)} {
		if access.LooksLikeToken(bad) {
			t.Errorf("LooksLikeToken(%q) = true", bad)
		}
	}
}

func TestTokenHint(t *testing.T) {
	tests := map[string]string{
		"clt_abcdefghijklmnopqrstuvwxyz012345": "clt_****************************2345",
		"abcdefghi":                            "abcd*fghi",
		"abcdefgh":                             "********",
		"":                                     "",
	}
	for in, want := range tests {
		if got := access.TokenHint(in); got != want {
			t.Errorf("TokenHint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseOwnerID(t *testing.T) {
	tests := []struct {
		in   string
		want access.Owner
		ok   bool
	}{
		{"integrations/abc", access.Owner{Kind: access.OwnerIntegration, ID: "abc"}, true},
		{"users/u1", access.Owner{Kind: access.OwnerUser, ID: "u1"}, true},
		{"integrations/abc/", access.Owner{Kind: access.OwnerIntegration, ID: "abc"}, true},
		{"integrations/", access.Owner{}, false},
		{"tokens/abc", access.Owner{}, false},
		{"abc", access.Owner{}, false},
		{"users/a/b", access.Owner{}, false},
	}
	for _, tt := range tests {
		got, err := access.ParseOwnerID(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseOwnerID(%q) = %+v, %v", tt.in, got, err)
		}
		if tt.ok && got.String() != strings.TrimSuffix(tt.in, "/") {
			t.Errorf("String() = %q", got.String())
		}
	}
}

func TestNewAccessTokenPolicy(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	admin := access.Principal{CompanyID: "c1", UserID: "u1", OwnerID: "users/u1", Roles: []access.Role{access.RoleAdmin}, Password: true}
	staff := access.Principal{CompanyID: "c1", UserID: "u2", OwnerID: "users/u2", Roles: []access.Role{access.RoleStaff}}
	superuser := access.Principal{CompanyID: "c1", UserID: "u3", Roles: []access.Role{access.RoleSuperuser}}
	integrationToken := access.Principal{CompanyID: "c1", TokenID: "t9", OwnerID: "integrations/i1", Roles: []access.Role{access.RoleAdmin}}
	scoped := access.Principal{CompanyID: "c1", UserID: "u2", TokenID: "t8", OwnerID: "users/u2", Roles: []access.Role{access.RoleStaff}, Scopes: []access.Scope{{Path: "/datatargets/7/*"}}}
	none := []access.Role{}

	tests := []struct {
		name      string
		p         access.Principal
		req       access.TokenRequest
		code      domain.Code
		owner     string
		roles     []access.Role
		createdBy string
	}{
		{"own token without owner", staff, access.TokenRequest{}, "", "users/u2", []access.Role{access.RoleStaff}, "users/u2"},
		{"own token by owner id", staff, access.TokenRequest{OwnerID: "users/u2"}, "", "users/u2", []access.Role{access.RoleStaff}, "users/u2"},
		{"own token carries roles without transfer", admin, access.TokenRequest{TransferPrivileges: false}, "", "users/u1", []access.Role{access.RoleAdmin}, "users/u1"},
		{"integration token by admin, no transfer", admin, access.TokenRequest{OwnerID: "integrations/i1"}, "", "integrations/i1", none, "users/u1"},
		{"integration token by admin, transfer", admin, access.TokenRequest{OwnerID: "integrations/i1", TransferPrivileges: true}, "", "integrations/i1", []access.Role{access.RoleAdmin}, "users/u1"},
		{"integration token by superuser", superuser, access.TokenRequest{OwnerID: "integrations/i1"}, "", "integrations/i1", none, "users/u3"},
		{"integration token by staff", staff, access.TokenRequest{OwnerID: "integrations/i1"}, domain.Forbidden, "", nil, ""},
		{"integration token by an admin integration token", integrationToken, access.TokenRequest{OwnerID: "integrations/i2", TransferPrivileges: true}, "", "integrations/i2", []access.Role{access.RoleAdmin}, "integrations/i1"},
		{"integration's own token needs admin too", access.Principal{CompanyID: "c1", TokenID: "t9", OwnerID: "integrations/i1"}, access.TokenRequest{}, domain.Forbidden, "", nil, ""},
		{"another user's token", admin, access.TokenRequest{OwnerID: "users/u2"}, domain.Forbidden, "", nil, ""},
		{"another user's token by the system", access.System("c1"), access.TokenRequest{OwnerID: "users/u2"}, "", "users/u2", none, "system"},
		{"system needs an owner", access.System("c1"), access.TokenRequest{}, domain.Validation, "", nil, ""},
		{"bad owner", admin, access.TokenRequest{OwnerID: "groups/g1"}, domain.Validation, "", nil, ""},
		{"bad scope", admin, access.TokenRequest{Scopes: []access.Scope{{Path: ""}}}, domain.Validation, "", nil, ""},
		{"long name", admin, access.TokenRequest{Name: strings.Repeat("x", 201)}, domain.Validation, "", nil, ""},
		{"scoped token within scope", scoped, access.TokenRequest{Scopes: []access.Scope{{Path: "/datatargets/7/retrieve"}}}, "", "users/u2", []access.Role{access.RoleStaff}, "users/u2"},
		{"scoped token widening", scoped, access.TokenRequest{}, domain.Forbidden, "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value := access.NewTokenValue()
			tok, err := access.NewAccessToken(tt.p, tt.req, "tok1", value, now)
			if got := domain.ErrorCode(err); got != tt.code {
				t.Fatalf("error %v, want code %q", err, tt.code)
			}
			if err != nil {
				return
			}
			want := access.AccessToken{
				ID: "tok1", CompanyID: "c1", OwnerID: tt.owner, Hint: access.TokenHint(value), Name: tt.req.Name,
				CreatedBy: tt.createdBy, CreatedAt: now, TransferredRoles: tt.roles, Scopes: tt.req.Scopes,
			}
			if diff := cmp.Diff(want, tok, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("token (-want +got):\n%s", diff)
			}
			if tok.TransferredRoles == nil {
				t.Error("TransferredRoles is nil, want an empty list")
			}
		})
	}
}

func TestNewIntegrationPolicy(t *testing.T) {
	now := time.Now()
	admin := access.Principal{CompanyID: "c1", UserID: "u1", Roles: []access.Role{access.RoleAdmin}}
	staff := access.Principal{CompanyID: "c1", UserID: "u2", Roles: []access.Role{access.RoleStaff}}
	if _, err := access.NewIntegration(staff, "i1", "shop", "My shop", "", now); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("staff: %v, want forbidden", err)
	}
	if _, err := access.NewIntegration(admin, "i1", "", " ", "", now); domain.ErrorCode(err) != domain.Validation {
		t.Errorf("no name: %v, want validation", err)
	}
	i, err := access.NewIntegration(admin, "i1", "magento", "", "d", now)
	if err != nil {
		t.Fatal(err)
	}
	want := access.Integration{ID: "i1", CompanyID: "c1", Name: "magento", IntegrationName: "magento", Description: "d", Enabled: true, CreatedAt: now.UTC(), CreatedBy: "users/u1"}
	if diff := cmp.Diff(want, i); diff != "" {
		t.Errorf("integration (-want +got):\n%s", diff)
	}
}

func TestNewUser(t *testing.T) {
	now := time.Now()
	admin := access.Principal{CompanyID: "c1", UserID: "u1", Roles: []access.Role{access.RoleAdmin}}
	tests := []struct {
		name  string
		p     access.Principal
		email string
		roles []access.Role
		code  domain.Code
		want  []access.Role
	}{
		{"staff by default", admin, "Ann@Example.com", nil, "", []access.Role{access.RoleStaff}},
		{"roles deduplicated", admin, "a@example.com", []access.Role{"ADMIN", "staff", "admin"}, "", []access.Role{access.RoleAdmin, access.RoleStaff}},
		{"unknown role", admin, "a@example.com", []access.Role{"owner"}, domain.Validation, nil},
		{"bad email", admin, "Ann <a@example.com>", nil, domain.Validation, nil},
		{"not an email", admin, "ann", nil, domain.Validation, nil},
		{"admin cannot grant superuser", admin, "a@example.com", []access.Role{access.RoleSuperuser}, domain.Forbidden, nil},
		{"system grants superuser", access.System("c1"), "a@example.com", []access.Role{access.RoleSuperuser}, "", []access.Role{access.RoleSuperuser}},
		{"staff cannot create users", access.Principal{CompanyID: "c1", UserID: "u2", Roles: []access.Role{access.RoleStaff}}, "a@example.com", nil, domain.Forbidden, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := access.NewUser(tt.p, "u9", tt.email, tt.roles, "hash", "", now)
			if got := domain.ErrorCode(err); got != tt.code {
				t.Fatalf("error %v, want code %q", err, tt.code)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, u.Roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			if u.Email != strings.ToLower(tt.email) {
				t.Errorf("email %q", u.Email)
			}
		})
	}
	if err := access.ValidatePassword("short"); domain.ErrorCode(err) != domain.Validation {
		t.Errorf("short password: %v", err)
	}
	if err := access.ValidatePassword("long enough password"); err != nil {
		t.Errorf("good password: %v", err)
	}
}

func TestPrincipalHasRole(t *testing.T) {
	tests := []struct {
		roles []access.Role
		r     access.Role
		want  bool
	}{
		{[]access.Role{access.RoleSuperuser}, access.RoleAdmin, true},
		{[]access.Role{access.RoleAdmin}, access.RoleStaff, true},
		{[]access.Role{access.RoleAdmin}, access.RoleSuperuser, false},
		{[]access.Role{access.RoleStaff}, access.RoleAdmin, false},
		{nil, access.RoleStaff, false},
	}
	for _, tt := range tests {
		if got := (access.Principal{Roles: tt.roles}).HasRole(tt.r); got != tt.want {
			t.Errorf("%v HasRole(%s) = %v", tt.roles, tt.r, got)
		}
	}
	if !access.System("c").HasRole(access.RoleSuperuser) {
		t.Error("system lacks a role")
	}
}
