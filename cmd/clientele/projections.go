package main

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clientele/clientele/projections"
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
	cmd.AddCommand(status, rebuild)
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
	fmt.Fprintln(w, "NAME\tKIND\tCHECKPOINT\tHEAD\tLAG (events)\tEVENTS/S\tAPPLIED\tUPDATED")
	for _, s := range first {
		updated := "-"
		if !s.UpdatedAt.IsZero() {
			updated = s.UpdatedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%.0f\t%d\t%s\n", s.Name, s.Kind, s.Checkpoint, s.Head, s.Lag, rates[s.Name], s.EventsApplied, updated)
	}
	return w.Flush()
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
