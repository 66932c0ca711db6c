package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

// demoLogin is how to log in to the demo company that `serve --demo`
// creates on first start.
type demoLogin struct {
	slug, email, password string
	// companyID is the demo company's id.
	companyID string
}

const demoSlug = "demo"

// ensureDemo creates the demo company and its admin on first start and
// returns the login. The password is kept in the data directory (mode
// 0600) so that later starts can print it again.
func ensureDemo(ctx context.Context, g *globals, a *app) (*demoLogin, error) {
	login := &demoLogin{slug: demoSlug, email: "admin@" + demoSlug + ".localhost"}
	pwFile := filepath.Join(g.dataDir, "demo-admin-password")
	c, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, demoSlug)
	switch {
	case domain.ErrorCode(err) == domain.NotFound:
		c, err = a.commands.CreateCompany.Handle(cliContext(ctx), commands.CreateCompany{
			Principal: access.System(""), Slug: demoSlug, Settings: company.Settings{Name: "Demo"},
		})
		if err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	login.companyID = c.ID
	if b, err := os.ReadFile(pwFile); err == nil {
		login.password = strings.TrimSpace(string(b))
		return login, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	raw := make([]byte, 9)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	login.password = hex.EncodeToString(raw)
	_, err = a.commands.CreateUser.Handle(cliContext(ctx), commands.CreateUser{
		Principal: access.System(c.ID), Email: login.email, Password: login.password, Roles: []access.Role{access.RoleAdmin},
	})
	if domain.ErrorCode(err) == domain.Conflict {
		return nil, fmt.Errorf("the demo admin %s exists but its password file %s is gone; create another user with `clientele user create`", login.email, pwFile)
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(g.dataDir, 0o755); err != nil {
		return nil, err
	}
	return login, os.WriteFile(pwFile, []byte(login.password+"\n"), 0o600)
}
