package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

func newCompanyCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "company", Short: "Manage companies (tenants)"}
	var s company.Settings
	create := &cobra.Command{
		Use:   "create SLUG",
		Short: "Create a company served at <SLUG>.<base-domain>",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if s.Name == "" {
				s.Name = args[0]
			}
			return g.withApp(cmd, func(ctx context.Context, a *app) error {
				c, err := a.commands.CreateCompany.Handle(cliContext(ctx), commands.CreateCompany{
					Principal: access.System(""), Slug: args[0], Settings: s,
				})
				if err != nil {
					return err
				}
				printCompany(g, c)
				return nil
			})
		},
	}
	f := create.Flags()
	f.StringVar(&s.Name, "name", "", "display name (default: the slug)")
	f.StringArrayVar(&s.Domains, "domain", nil, "custom host name served for the company (repeatable)")
	f.StringVar(&s.Timezone, "timezone", "", "IANA time zone for naive datetimes, e.g. Europe/Helsinki (default UTC)")
	f.StringVar(&s.Currency, "currency", "", "default ISO 4217 currency, e.g. EUR (default EUR)")
	f.StringVar(&s.ShortName, "short-name", "", "prefix of company-specific fields, <SHORT>__<field> (default: from the slug)")

	var ch settingsFlags
	update := &cobra.Command{
		Use:   "update SLUG",
		Short: "Change a company's settings (only the flags given)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error {
				c, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, args[0])
				if err != nil {
					return err
				}
				c, err = a.commands.UpdateCompanySettings.Handle(cliContext(ctx), commands.UpdateCompanySettings{
					Principal: access.System(c.ID), CompanyID: c.ID, Change: ch.change(cmd),
				})
				if err != nil {
					return err
				}
				printCompany(g, c)
				return nil
			})
		},
	}
	ch.bind(update)
	cmd.AddCommand(create, update)
	return cmd
}

// settingsFlags are the flags of `company update`; only the flags given
// change.
type settingsFlags struct {
	name, timezone, currency, shortName string
	domains, eventTypes                 []string
}

func (s *settingsFlags) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.name, "name", "", "display name")
	f.StringVar(&s.timezone, "timezone", "", "IANA time zone")
	f.StringVar(&s.currency, "currency", "", "default ISO 4217 currency")
	f.StringVar(&s.shortName, "short-name", "", "prefix of company-specific fields")
	f.StringArrayVar(&s.domains, "domain", nil, "custom host names (repeatable; replaces the list; --domain '' clears it)")
	f.StringArrayVar(&s.eventTypes, "event-type", nil, "custom event types (repeatable; replaces the list; --event-type '' clears it)")
}

func (s *settingsFlags) change(cmd *cobra.Command) company.SettingsChange {
	var ch company.SettingsChange
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	if set("name") {
		ch.Name = &s.name
	}
	if set("timezone") {
		ch.Timezone = &s.timezone
	}
	if set("currency") {
		ch.Currency = &s.currency
	}
	if set("short-name") {
		ch.ShortName = &s.shortName
	}
	if set("domain") {
		d := nonEmpty(s.domains)
		ch.Domains = &d
	}
	if set("event-type") {
		t := nonEmpty(s.eventTypes)
		ch.CustomEventTypes = &t
	}
	return ch
}

func nonEmpty(list []string) []string {
	out := []string{}
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func printCompany(g *globals, c company.Company) {
	fmt.Fprintf(g.stdout, "company %s\n  id:          %s\n  name:        %s\n  timezone:    %s\n  currency:    %s\n  short name:  %s\n  domains:     %s\n  event types: %s\n",
		c.Slug, c.ID, c.Name, c.Timezone, c.Currency, c.ShortName, strings.Join(c.Domains, ", "), strings.Join(c.CustomEventTypes, ", "))
}

// cliContext marks the events appended by a CLI command as such.
func cliContext(ctx context.Context) context.Context {
	return commands.WithRequest(ctx, "cli", commands.NewID())
}
