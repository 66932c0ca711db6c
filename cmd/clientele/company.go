package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	var rates []string
	create := &cobra.Command{
		Use:   "create SLUG",
		Short: "Create a company served at <SLUG>.<base-domain>",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if s.Name == "" {
				s.Name = args[0]
			}
			if len(rates) > 0 {
				change, err := parseRates(rates)
				if err != nil {
					return err
				}
				s.ExchangeRates = map[string]string{}
				for code, r := range change {
					if r == nil {
						return fmt.Errorf("--exchange-rate %s= removes a rate; a new company has none", code)
					}
					s.ExchangeRates[code] = *r
				}
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
	f.StringVar(&s.PhoneRegion, "phone-region", "", phoneRegionUsage+" (default: none)")
	f.StringArrayVar(&rates, "exchange-rate", nil, exchangeRateUsage)

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
				change, err := ch.change(cmd)
				if err != nil {
					return err
				}
				c, err = a.commands.UpdateCompanySettings.Handle(cliContext(ctx), commands.UpdateCompanySettings{
					Principal: access.System(c.ID), CompanyID: c.ID, Change: change,
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
	cmd.AddCommand(create, update, newSFTPKeyCommand(g))
	return cmd
}

// settingsFlags are the flags of `company update`; only the flags given
// change.
type settingsFlags struct {
	name, timezone, currency, shortName, phoneRegion string
	domains, eventTypes, rates                       []string
}

// phoneRegionUsage documents --phone-region.
const phoneRegionUsage = "ISO 3166-1 alpha-2 country in which a phone number without + is read when its record names " +
	"no country, e.g. FI; empty: international numbers only"

// exchangeRateUsage documents --exchange-rate.
const exchangeRateUsage = "exchange rate CODE=RATE from the ISO 4217 currency CODE to the default currency: " +
	"default-currency amount = amount in CODE / RATE, e.g. USD=1.08 (repeatable)"

func (s *settingsFlags) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.name, "name", "", "display name")
	f.StringVar(&s.timezone, "timezone", "", "IANA time zone")
	f.StringVar(&s.currency, "currency", "", "default ISO 4217 currency")
	f.StringVar(&s.shortName, "short-name", "", "prefix of company-specific fields")
	f.StringVar(&s.phoneRegion, "phone-region", "", phoneRegionUsage+" (--phone-region '' removes it)")
	f.StringArrayVar(&s.domains, "domain", nil, "custom host names (repeatable; replaces the list; --domain '' clears it)")
	f.StringArrayVar(&s.eventTypes, "event-type", nil, "custom event types (repeatable; replaces the list; --event-type '' clears it)")
	f.StringArrayVar(&s.rates, "exchange-rate", nil, exchangeRateUsage+"; sets the rates given and keeps the others; CODE= removes CODE's rate")
}

func (s *settingsFlags) change(cmd *cobra.Command) (company.SettingsChange, error) {
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
	if set("phone-region") {
		ch.PhoneRegion = &s.phoneRegion
	}
	if set("domain") {
		d := nonEmpty(s.domains)
		ch.Domains = &d
	}
	if set("event-type") {
		t := nonEmpty(s.eventTypes)
		ch.CustomEventTypes = &t
	}
	if set("exchange-rate") {
		rates, err := parseRates(s.rates)
		if err != nil {
			return ch, err
		}
		ch.ExchangeRates = rates
	}
	return ch, nil
}

// parseRates reads --exchange-rate values, CODE=RATE, into a change of
// the rate table: CODE= (an empty rate) removes the currency. The domain
// checks codes and rates.
func parseRates(flags []string) (map[string]*string, error) {
	out := make(map[string]*string, len(flags))
	for _, f := range flags {
		code, rate, ok := strings.Cut(f, "=")
		code, rate = strings.ToUpper(strings.TrimSpace(code)), strings.TrimSpace(rate)
		if !ok || code == "" {
			return nil, fmt.Errorf("--exchange-rate %q: want CODE=RATE, e.g. USD=1.08 (USD= removes the rate)", f)
		}
		if _, dup := out[code]; dup {
			return nil, fmt.Errorf("--exchange-rate: %s given twice", code)
		}
		if rate == "" {
			out[code] = nil
		} else {
			out[code] = &rate
		}
	}
	return out, nil
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
	fmt.Fprintf(g.stdout, "company %s\n  id:             %s\n  name:           %s\n  timezone:       %s\n  currency:       %s\n  phone region:   %s\n  short name:     %s\n  domains:        %s\n  event types:    %s\n  exchange rates: %s\n",
		c.Slug, c.ID, c.Name, c.Timezone, c.Currency, c.PhoneRegion, c.ShortName, strings.Join(c.Domains, ", "), strings.Join(c.CustomEventTypes, ", "),
		formatRates(c))
}

// formatRates shows the rate table as "SEK 11.5, USD 1.08 (per 1 EUR)":
// a rate is the amount of that currency one unit of the default currency
// buys.
func formatRates(c company.Company) string {
	if len(c.ExchangeRates) == 0 {
		return ""
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(c.ExchangeRates)) {
		parts = append(parts, code+" "+c.ExchangeRates[code])
	}
	return strings.Join(parts, ", ") + " (per 1 " + c.Currency + ")"
}

// cliContext marks the events appended by a CLI command as such.
func cliContext(ctx context.Context) context.Context {
	return commands.WithRequest(ctx, "cli", commands.NewID())
}
