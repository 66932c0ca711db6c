package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/readmodels"
)

func newUserCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Manage users"}
	var slug, email, password, role string
	var totp bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a user of a company",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := access.ParseRole(role)
			if err != nil {
				return err
			}
			return g.withApp(cmd, func(ctx context.Context, a *app) error {
				c, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, slug)
				if err != nil {
					return fmt.Errorf("company %q: %w", slug, err)
				}
				u, err := a.commands.CreateUser.Handle(cliContext(ctx), commands.CreateUser{
					Principal: access.System(c.ID), Email: email, Password: password, Roles: []access.Role{r}, TOTP: totp,
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "user %s (id %s, role %s) created in company %s\n", u.User.Email, u.User.ID, r, c.Slug)
				if u.TOTPURI != "" {
					fmt.Fprintf(g.stdout, "TOTP secret: %s\nTOTP URI:    %s\n", u.TOTPSecret, u.TOTPURI)
				}
				return nil
			})
		},
	}
	f := create.Flags()
	f.StringVar(&slug, "company", "", "slug of the user's company")
	f.StringVar(&email, "email", "", "email address, the user name for basic authentication")
	f.StringVar(&password, "password", "", "password (at least 10 characters)")
	f.StringVar(&role, "role", string(access.RoleAdmin), "admin or staff")
	f.BoolVar(&totp, "totp", false, "require a TOTP code (prints the secret and otpauth URI)")
	for _, name := range []string{"company", "email", "password"} {
		_ = create.MarkFlagRequired(name)
	}
	cmd.AddCommand(create)
	return cmd
}
