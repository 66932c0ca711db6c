package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/readmodels"
)

// importersFor returns the Importer of each importable entity; an entity
// without one has no upload route and cannot be imported. It is a
// variable so that tests can import with a test Importer.
var importersFor = func(a *app) map[importing.Entity]imports.Importer {
	return map[importing.Entity]imports.Importer{
		importing.Customers: imports.NewCustomerImporter(a.store, a.keys, time.Now),
		importing.Shops:     imports.NewShopImporter(a.store),
		importing.Products:  imports.NewProductImporter(a.store),
		importing.Events:    imports.NewEventImporter(a.store, a.keys, time.Now),
		importing.Sales:     imports.NewSaleImporter(a.store, a.keys, time.Now),
	}
}

// openImports builds the import pipeline: the stager of uploads and, when
// some entity has an Importer, the worker that applies them.
func (a *app) openImports() error {
	a.importers = importersFor(a)
	a.stageUpload = imports.NewStageUploadHandler(a.pool, a.keys, ingest.Limits{})
	if len(a.importers) == 0 {
		return nil
	}
	w, err := imports.NewImportWorker(imports.ImportWorkerConfig{
		Pool: a.pool, Keys: a.keys, Transactions: a.store, Importers: a.importers, Companies: readmodels.NewCompanies(a.pool, ""),
		Registerer: a.metrics, Transport: a.transport, ConsumerSettings: bus.ConsumerSettings{Logger: a.log},
	})
	a.importWorker = w
	return err
}

type importFlags struct {
	company, entity, format, charset string
	rejections                       int
}

func newImportCommand(g *globals) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import --company SLUG --entity ENTITY [--format json|csv] FILE",
		Short: "Import a file of records, as an upload would",
		Long: `Import stages FILE ("-" for standard input) exactly as an upload to
/api/<entity>/upload/ would be staged, then runs the import worker in this
process until the run is done, and prints its counts and first rejections.
It works whether or not serve runs on the same database: the workers share
one consumer group and take the chunks one at a time, in upload order.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app) error { return importFile(ctx, g, a, f, args[0]) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.company, "company", "", "slug of the company to import into (required)")
	fl.StringVar(&f.entity, "entity", string(importing.Customers), "what the file holds: customers, products, events, sales or shops")
	fl.StringVar(&f.format, "format", "", "json or csv (default: csv for a .csv file, else json)")
	fl.StringVar(&f.charset, "charset", "", "charset of the file: utf-8 (default), utf-16 or iso-8859-1 (a byte order mark wins)")
	fl.IntVar(&f.rejections, "rejections", 10, "how many rejections to print")
	_ = cmd.MarkFlagRequired("company")
	return cmd
}

func importFile(ctx context.Context, g *globals, a *app, f importFlags, path string) error {
	co, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, f.company)
	if err != nil {
		return fmt.Errorf("--company %s: %w", f.company, err)
	}
	entity := importing.Entity(f.entity)
	if a.importers[entity] == nil {
		var have []string
		for e := range a.importers {
			have = append(have, string(e))
		}
		slices.Sort(have)
		return fmt.Errorf("--entity %s: cannot be imported; importable: %s", f.entity, strings.Join(have, ", "))
	}
	format, err := importFormat(f.format, path)
	if err != nil {
		return err
	}
	in, size, err := openInput(path)
	if err != nil {
		return err
	}
	defer in.Close()

	bar := newBar(g, size, "staging", true)
	up, err := a.stageUpload.Handle(commands.WithRequest(ctx, "cli", commands.NewID()), imports.StageUpload{
		Principal: access.System(co.ID), Entity: entity, Format: format, Charset: f.charset,
		Body: io.TeeReader(in, bar), Source: "cli",
	})
	_ = bar.Finish()
	fmt.Fprintln(g.stderr)
	if err != nil {
		return err
	}
	run, err := work(ctx, g, a, co.ID, up)
	if err != nil {
		return err
	}
	return report(ctx, g, a, run, f.rejections)
}

func importFormat(flag, path string) (ingest.Format, error) {
	switch strings.ToLower(flag) {
	case "json":
		return ingest.JSON, nil
	case "csv":
		return ingest.CSV, nil
	case "":
		if strings.EqualFold(filepath.Ext(path), ".csv") {
			return ingest.CSV, nil
		}
		return ingest.JSON, nil
	}
	return "", fmt.Errorf("--format %q: want json or csv", flag)
}

// openInput opens the file, or standard input for "-"; size is -1 when
// unknown.
func openInput(path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), -1, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	return file, st.Size(), nil
}

func newBar(g *globals, max int64, what string, bytes bool) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(g.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(200 * time.Millisecond),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString("records"))
	}
	return progressbar.NewOptions64(max, opts...)
}
