// Command clientele is the one binary of the service: the HTTP server and
// the administration commands (migrations, companies, users, projections).
//
// This package alone reads flags and the environment; it builds the object
// graph and runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // company time zones must resolve on machines without tzdata

	"github.com/spf13/cobra"

	"github.com/clientele/clientele/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientele:", err)
		var de *domain.Error
		if errors.As(err, &de) {
			for _, d := range de.Details {
				fmt.Fprintf(os.Stderr, "  %s: %s\n", d.Field, d.Reason)
			}
		}
		os.Exit(1)
	}
}

// run executes the command line args; tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	root := newRootCommand(stdout, stderr, getenv)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func newRootCommand(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr, getenv: getenv}
	root := &cobra.Command{
		Use:           "clientele",
		Short:         "Clientele: customer data and marketing service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	g.bind(root)
	root.AddCommand(
		newServeCommand(g),
		newMigrateCommand(g),
		newCompanyCommand(g),
		newUserCommand(g),
		newProjectionsCommand(g),
		newImportCommand(g),
		newHistoryCommand(g),
		newReceiveCommand(g),
		newExportCommand(g),
	)
	return root
}
