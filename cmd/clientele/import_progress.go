package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/readmodels"
)

// work runs the import worker in this process until the run is completed
// or failed, with a progress bar on the records processed. The worker may
// apply other runs' chunks too (they come first, in upload order), and a
// worker of serve on the same database may apply some of this run's.
func work(ctx context.Context, g *globals, a *app, companyID string, up imports.StagedUpload) (readmodels.ImportRun, error) {
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.importWorker.Run(wctx) }()
	defer func() {
		stop()
		<-done
	}()

	runs := readmodels.NewImports(a.pool)
	bar := newBar(g, int64(up.Received), "importing", false)
	defer func() {
		_ = bar.Finish()
		fmt.Fprintln(g.stderr)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		run, err := runs.Run(ctx, companyID, up.RunID)
		if err != nil {
			return run, err
		}
		_ = bar.Set64(run.Accepted + run.Rejected)
		if run.State == importing.Completed || run.State == importing.Failed {
			return run, nil
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(g.stderr, "\ninterrupted: run %s stays scheduled; a worker (serve, or import again) will finish it\n", up.RunID)
			return run, ctx.Err()
		case err := <-done:
			if err == nil {
				err = errors.New("stopped")
			}
			return run, fmt.Errorf("import worker: %w", err)
		case <-tick.C:
		}
	}
}

// report prints the run's counts and its first rejections; a failed run
// is an error.
func report(ctx context.Context, g *globals, a *app, run readmodels.ImportRun, rejections int) error {
	took := ""
	if run.StartedAt != nil && run.FinishedAt != nil {
		took = fmt.Sprintf(" in %.1fs", run.FinishedAt.Sub(*run.StartedAt).Seconds())
	}
	fmt.Fprintf(g.stdout, "run %s %s%s: %d received, %d accepted, %d rejected\n",
		run.ID, run.State, took, run.Received, run.Accepted, run.Rejected)
	if rejections > 0 && run.Rejected > 0 {
		list, next, err := readmodels.NewImports(a.pool).Rejections(ctx, run.ID, "", min(rejections, readmodels.MaxLimit))
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "RECORD\tFIELD\tREASON")
		for _, r := range list {
			fmt.Fprintf(w, "%d\t%s\t%s\n", r.Index, r.Field, r.Reason)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if next != "" {
			fmt.Fprintf(g.stdout, "... and more: GET /api/imports/%s/\n", run.ID)
		}
	}
	if run.State == importing.Failed {
		return fmt.Errorf("run %s failed: %s", run.ID, run.Failure)
	}
	return nil
}
