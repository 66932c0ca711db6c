package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/readmodels"
)

func newProjectionsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "projections", Short: "Inspect and rebuild read models"}
	var sample time.Duration
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each projection's checkpoint, lag and speed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error { return projectionStatus(ctx, g, a, sample) })
		},
	}
	status.Flags().DurationVar(&sample, "sample", time.Second, "how long to watch to measure events/s (0: do not measure)")
	rebuild := &cobra.Command{
		Use:   "rebuild NAME",
		Short: "Rebuild a read model from the log into fresh tables, then swap them in",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error { return projectionRebuild(ctx, g, a, args[0]) })
		},
	}
	stalls := &cobra.Command{
		Use:   "stalls [NAME]",
		Short: "Show the companies parked for a projection: a commit of theirs cannot be applied, and their later commits wait",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error {
				name := ""
				if len(args) == 1 {
					name = args[0]
				}
				return projectionStalls(ctx, g, a, name)
			})
		},
	}
	var company string
	retry := &cobra.Command{
		Use:   "retry NAME",
		Short: "Retry now the companies parked for a projection (--company: one of them), applying their held commits in order",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error { return projectionRetry(ctx, g, a, args[0], company) })
		},
	}
	retry.Flags().StringVar(&company, "company", "", "slug or id of the parked company (default: every company parked for NAME)")
	cmd.AddCommand(status, rebuild, stalls, retry)
	return cmd
}

func projectionStatus(ctx context.Context, g *globals, a *app, sample time.Duration) error {
	first, err := a.runtime.Status(ctx)
	if err != nil {
		return err
	}
	rates := map[string]float64{}
	if sample > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sample):
		}
		second, err := a.runtime.Status(ctx)
		if err != nil {
			return err
		}
		for i := range second {
			rates[second[i].Name] = projections.Rate(first[i], second[i])
		}
		first = second
	}
	sort.Slice(first, func(i, j int) bool { return first[i].Name < first[j].Name })
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tCHECKPOINT\tHEAD\tLAG (events)\tEVENTS/S\tAPPLIED\tUPDATED\tSTALLED COMPANIES")
	stalled := 0
	for _, s := range first {
		updated := "-"
		if !s.UpdatedAt.IsZero() {
			updated = s.UpdatedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%.0f\t%d\t%s\t%d\n", s.Name, s.Kind, s.Checkpoint, s.Head, s.Lag, rates[s.Name], s.EventsApplied, updated, s.StalledCompanies)
		stalled += s.StalledCompanies
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if stalled > 0 {
		fmt.Fprintln(g.stdout)
		if err := projectionStalls(ctx, g, a, ""); err != nil {
			return err
		}
	}
	return printImportsStandingStill(ctx, g.stdout, a)
}

func projectionRebuild(ctx context.Context, g *globals, a *app, name string) error {
	// The bar appears with the first progress report, so a refused rebuild
	// (unknown name, one already running) prints only its error.
	var bar *progressbar.ProgressBar
	start := time.Now()
	var total int64
	err := a.runtime.Rebuild(ctx, name, func(done, all int64) {
		if bar == nil {
			bar = progressbar.NewOptions64(all,
				progressbar.OptionSetWriter(g.stderr),
				progressbar.OptionSetDescription("rebuilding "+name),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("events"),
				progressbar.OptionThrottle(200*time.Millisecond),
			)
		}
		total = done
		bar.ChangeMax64(all)
		_ = bar.Set64(done)
	})
	if bar == nil {
		return err
	}
	_ = bar.Finish()
	fmt.Fprintln(g.stderr)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(g.stdout, "rebuilt %s: %d events in %.1fs (%.0f events/s)\n", name, total, secs, float64(total)/secs)
	return nil
}

// projectionStalls prints the companies parked for the projection name
// (every projection when name is empty), each with its stalled commit
// and the error, in full, on a line of its own.
func projectionStalls(ctx context.Context, g *globals, a *app, name string) error {
	stalls, err := a.runtime.Stalls(ctx)
	if err != nil {
		return err
	}
	stalls = slices.DeleteFunc(stalls, func(s projections.Stall) bool { return name != "" && s.Projection != name })
	if len(stalls) == 0 {
		fmt.Fprintln(g.stdout, "no company is parked")
		return nil
	}
	slugs, err := companySlugs(ctx, a)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROJECTION\tCOMPANY\tSTALLED COMMIT\tHELD UNTIL\tSINCE\tATTEMPTS\tNEXT RETRY")
	for _, s := range stalls {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Projection, slugs(s.CompanyID), s.Commit, s.HeldUntil,
			s.Since.Format(time.RFC3339), s.Attempts, s.RetryAt.Format(time.RFC3339))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, s := range stalls {
		fmt.Fprintf(g.stdout, "\n%s, company %s: %s\n", s.Projection, slugs(s.CompanyID), strings.ReplaceAll(s.Error, "\n", "\n  "))
	}
	fmt.Fprintf(g.stdout, "\nretry now: clientele projections retry PROJECTION [--company COMPANY]\n")
	return nil
}

// projectionRetry retries the companies parked for the projection name,
// or the one given, and fails unless every one resumed.
func projectionRetry(ctx context.Context, g *globals, a *app, name, company string) error {
	var companies []string
	if company != "" {
		co, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, company)
		switch {
		case err == nil:
			companies = []string{co.ID}
		case domain.ErrorCode(err) == domain.NotFound:
			companies = []string{company} // an id, or a company gone
		default:
			return err
		}
	} else {
		stalls, err := a.runtime.Stalls(ctx)
		if err != nil {
			return err
		}
		for _, s := range stalls {
			if s.Projection == name {
				companies = append(companies, s.CompanyID)
			}
		}
	}
	slugs, err := companySlugs(ctx, a)
	if err != nil {
		return err
	}
	var failed []error
	for _, id := range companies {
		n, err := a.runtime.RetryStall(ctx, name, id)
		if err != nil {
			failed = append(failed, fmt.Errorf("%s: company %s is still parked (%d held commits applied): %w", name, slugs(id), n, err))
			continue
		}
		fmt.Fprintf(g.stdout, "%s: company %s resumed (%d held commits applied)\n", name, slugs(id), n)
	}
	if len(companies) == 0 {
		fmt.Fprintf(g.stdout, "%s: no company is parked\n", name)
	}
	return errors.Join(failed...)
}

// companySlugs returns what names a company id for people to read: its
// slug and the id, or the id alone when no company has it.
func companySlugs(ctx context.Context, a *app) (func(id string) string, error) {
	all, err := readmodels.NewCompanies(a.pool, "").List(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, co := range all {
		names[co.ID] = co.Slug + " (" + co.ID + ")"
	}
	return func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		return id
	}, nil
}
