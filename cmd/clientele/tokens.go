package main

import (
	"context"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/internal/backoff"
	"github.com/clientele/clientele/internal/pg"
)

// issueCustomerTokens gives a tracking token to the customers created
// before customers were created with one (imports.IssueCustomerTokens),
// until none is left; serve runs it in the background at start. Every
// node does, and they share the work. A failed round is retried with a
// backoff, and so is a round that leaves customers another node holds:
// should that node stop halfway, this one finishes. It returns when the
// work is done or ctx ends; it never stops serve.
func issueCustomerTokens(ctx context.Context, a *app) {
	h := imports.NewIssueCustomerTokensHandler(a.pool, a.store, a.keys, time.Now)
	for round := 1; ; round++ {
		start := time.Now()
		got, err := h.Handle(ctx, imports.IssueCustomerTokens{})
		if got.Issued > 0 {
			a.log.Info("issued tracking tokens to customers from before tokens", "customers", got.Issued,
				"seconds", time.Since(start).Seconds())
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// A lock it gave up for an import chunk, or the database
			// away, is a warning: the next round goes on.
			a.log.Log(ctx, pg.Level(err), "issue tracking tokens to customers from before tokens; retrying", "err", err)
		case !got.Remaining:
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Doubling{Min: time.Second, Max: time.Minute}.After(round)):
		}
	}
}
