package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

func newHistoryCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "history", Short: "Show the audit history of an entity, from the event log"}
	var slug string
	customer := &cobra.Command{
		Use:   "customer ID",
		Short: "Every event of a customer: when, by whom, and what it changed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error {
				co, err := historyCompany(ctx, a, slug)
				if err != nil {
					return err
				}
				h, err := readmodels.NewCustomerHistory(a.store, a.pool, a.keys).Customer(ctx, co.ID, args[0])
				if err != nil {
					return err
				}
				return printHistory(g.stdout, co, h)
			})
		},
	}
	customer.Flags().StringVar(&slug, "company", "", "slug of the customer's company (default: the only company)")
	cmd.AddCommand(customer)
	return cmd
}

// historyCompany is the company named by --company, or the only one. Ids
// alone do not say whose a customer is, and guessing across companies
// would read another tenant's data.
func historyCompany(ctx context.Context, a *app, slug string) (company.Company, error) {
	q := readmodels.NewCompanies(a.pool, "")
	if slug != "" {
		return q.BySlug(ctx, slug)
	}
	all, err := q.List(ctx)
	if err != nil {
		return company.Company{}, err
	}
	if len(all) != 1 {
		return company.Company{}, domain.Errorf(domain.Invalid, "--company is required: there are %d companies", len(all))
	}
	return all[0], nil
}

// printHistory writes one block per event: what, when, who, and the
// changes, one line each.
func printHistory(w io.Writer, co company.Company, h readmodels.History) error {
	var b strings.Builder
	fmt.Fprintf(&b, "customer %s of company %s", h.CustomerID, co.Slug)
	if h.Deleted {
		b.WriteString(", deleted")
	}
	if h.Forgotten {
		b.WriteString(", forgotten: the values are gone, only the names of the changed fields remain")
	}
	b.WriteString("\n")
	for _, e := range h.Events {
		m := e.Metadata
		fmt.Fprintf(&b, "\n#%d %s at %s\n  run %s, actor %s, source %s, correlation %s\n",
			e.Version, e.Type, e.RecordedAt.UTC().Format("2006-01-02T15:04:05.000000Z"), dash(m.RunID), dash(m.Actor), dash(m.Source), dash(m.CorrelationID))
		switch {
		case e.Changes != nil:
			for _, k := range sortedKeys(e.Changes.Set) {
				v, _ := json.Marshal(e.Changes.Set[k])
				fmt.Fprintf(&b, "  set %s = %s\n", k, v)
			}
			for _, k := range e.Changes.Unset {
				fmt.Fprintf(&b, "  unset %s\n", k)
			}
			for _, k := range sortedKeys(e.Changes.Add) {
				fmt.Fprintf(&b, "  add to %s: %s\n", k, strings.Join(e.Changes.Add[k], ", "))
			}
			for _, k := range sortedKeys(e.Changes.Remove) {
				fmt.Fprintf(&b, "  remove from %s: %s\n", k, strings.Join(e.Changes.Remove[k], ", "))
			}
		case e.Redacted:
			fmt.Fprintf(&b, "  changed %s (values forgotten)\n", strings.Join(e.Fields, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
