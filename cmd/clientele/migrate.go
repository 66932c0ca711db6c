package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func newMigrateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations (serve also applies them at start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// open applies the migrations.
			return g.withApp(cmd, func(ctx context.Context, a *app) error {
				fmt.Fprintln(g.stdout, "migrations applied")
				return nil
			})
		},
	}
}
