package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/clientele/clientele/commands/imports"
)

// importStallAfter is how long a company's imports must have stood still
// to be listed: the import worker's StallAfter default, after which it
// retries them itself.
const importStallAfter = 30 * time.Second

// printImportsStandingStill lists, after the projections, the companies
// whose imports have not moved for importStallAfter, with the chunk that
// holds them back, its failures and the last one's reason: the uploads of
// such a company are still answered 200, so nothing else shows them.
// Nothing is printed when there are none.
func printImportsStandingStill(ctx context.Context, out io.Writer, a *app) error {
	still, err := imports.NewStore(a.pool, a.keys).StoodStill(ctx, importStallAfter)
	if err != nil || len(still) == 0 {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nIMPORTS STANDING STILL")
	fmt.Fprintln(w, "COMPANY\tRUN\tENTITY\tCHUNK\tSINCE\tFAILURES\tLAST FAILURE")
	for _, s := range still {
		last := s.LastFailure
		if last == "" {
			last = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", s.CompanyID, s.RunID, s.Entity, s.Seq, s.Since.UTC().Format(time.RFC3339), s.Failures, last)
	}
	return w.Flush()
}
