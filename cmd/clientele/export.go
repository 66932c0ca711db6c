package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/export"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/readmodels"
)

type exportFlags struct {
	company, asOf, format, out string
}

func newExportCommand(g *globals) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export --company SLUG [--as-of DATETIME] --format parquet|ndjson --out DIR",
		Short: "Write the company's read models as of an instant, one file each, for DuckDB, pandas or Spark",
		Long: `Replays the company's log up to --as-of (default: now) into scratch tables with the
projectors themselves, then writes one file per read model to DIR: customers, products,
shops, events, sales, sale_rows and campaigns. Forgotten customers are in their forgotten
form. See docs/export.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error { return exportCompany(ctx, g, a, f) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.company, "company", "", "slug of the company (required)")
	fl.StringVar(&f.asOf, "as-of", "", "the instant, a datetime as the API takes one (default: now)")
	fl.StringVar(&f.format, "format", "parquet", "parquet or ndjson")
	fl.StringVar(&f.out, "out", "", "directory to write the files to (required)")
	_ = cmd.MarkFlagRequired("company")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// exportKeyCache bounds the customers' keys an export keeps: two
// generations of this many customers each (about 20 MB at most).
const exportKeyCache = 50_000

// exportProjectors are the projectors of the read models an export
// writes (export.Tables): a rebuild's, replayed into scratch tables. They
// share one cache of the customers' keys for the export: each page of
// the replay names its customers' keys again (the events projector loaded
// 5,000 a page of 5,000 events, whose customers recur page after page),
// and the replay reads only commits made before it began, so a key as
// first found is the one wanted.
func exportProjectors(a *app) []projections.Projector {
	keys := crypto.KeyStore{Keyring: a.keys.Keyring, Cache: crypto.NewKeyCache(exportKeyCache)}
	return []projections.Projector{retrieval.NewCustomers(keys), retrieval.NewProducts(), retrieval.NewShops(),
		retrieval.NewEvents(keys), retrieval.NewSales(keys), campaignstats.Campaigns{}}
}

func exportCompany(ctx context.Context, g *globals, a *app, f exportFlags) error {
	co, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, f.company)
	if err != nil {
		return fmt.Errorf("--company %s: %w", f.company, err)
	}
	format, err := export.ParseFormat(f.format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	var at time.Time
	if f.asOf != "" {
		s, reason := values.DateTime(f.asOf, co.Location())
		if reason != "" {
			return fmt.Errorf("--as-of: %s", reason)
		}
		if at, err = time.Parse(values.DateTimeLayout, s); err != nil {
			return fmt.Errorf("--as-of: is not a datetime")
		}
	}
	p := newExportProgress(g.stderr)
	sum, err := export.Run(ctx, export.Config{Pool: a.pool, Log: a.store, Projectors: exportProjectors(a)},
		export.Request{CompanyID: co.ID, AsOf: at, Format: format, Dir: f.out, Progress: p.report})
	p.finish()
	if err != nil {
		return err
	}
	took := sum.Replay + sum.Write
	fmt.Fprintf(g.stdout, "%s as of %s: %d events replayed in %.1fs, %d records written in %.1fs (%.0f records/s overall)\n",
		co.Slug, sum.AsOf.Format(time.RFC3339), sum.Events, sum.Replay.Seconds(), sum.Records(), sum.Write.Seconds(),
		float64(sum.Records())/max(took.Seconds(), 1e-9))
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "FILE\tROWS\tBYTES\t")
	for _, file := range sum.Files {
		fmt.Fprintf(w, "%s\t%d\t%d\t\n", file.Path, file.Rows, file.Bytes)
	}
	return w.Flush()
}

// exportProgress shows an export's progress on stderr when it is a
// terminal, and nothing otherwise (a script's log stays clean).
type exportProgress struct {
	out   io.Writer
	on    bool
	bar   *progressbar.ProgressBar
	table string
}

func newExportProgress(stderr io.Writer) *exportProgress {
	return &exportProgress{out: stderr, on: isTerminal(stderr)}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *exportProgress) report(pr export.Progress) {
	if !p.on {
		return
	}
	if p.bar == nil || pr.Table != p.table {
		p.finish()
		what, unit := "replaying the log", "events"
		if pr.Table != "" {
			what, unit = "writing "+pr.Table, "rows"
		}
		p.table = pr.Table
		p.bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(p.out), progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSpinnerType(14))
	}
	_ = p.bar.Set64(pr.Done)
}

func (p *exportProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.out)
		p.bar = nil
	}
}
