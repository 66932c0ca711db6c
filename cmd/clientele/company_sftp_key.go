package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/readmodels"
)

// newSFTPKeyCommand is `company sftp-key`: the public keys that log in to
// a company's SFTP drop directory (docs/sftp.md), managed by the operator
// as an admin would through /api/sftp-keys/.
func newSFTPKeyCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sftp-key", Short: "Manage the public keys of a company's SFTP drop directory"}
	var name string
	add := &cobra.Command{
		Use:   "add SLUG FILE",
		Short: "Register the public key in FILE (one authorized_keys line, e.g. id_ed25519.pub; - reads stdin)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var line []byte
			var err error
			if args[1] == "-" {
				line, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10))
			} else {
				line, err = os.ReadFile(args[1])
			}
			if err != nil {
				return err
			}
			return withCompany(g, cmd, args[0], func(ctx context.Context, a *app, companyID string) error {
				k, err := a.commands.AddSFTPKey.Handle(cliContext(ctx), commands.AddSFTPKey{
					Principal: access.System(companyID), PublicKey: string(line), Name: name,
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "sftp key %s\n  name:        %s\n  fingerprint: %s\n", k.ID, k.Name, k.Fingerprint)
				return nil
			})
		},
	}
	add.Flags().StringVar(&name, "name", "", "name of the key (default: the key's comment)")
	list := &cobra.Command{
		Use:   "list SLUG",
		Short: "List the company's keys",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCompany(g, cmd, args[0], func(ctx context.Context, a *app, companyID string) error {
				keys, err := readmodels.NewSFTPKeys(a.pool).List(ctx, companyID)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tFINGERPRINT\tCREATED")
				for _, k := range keys {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Fingerprint, k.CreatedAt.Format("2006-01-02T15:04:05Z"))
				}
				return w.Flush()
			})
		},
	}
	remove := &cobra.Command{
		Use:   "remove SLUG ID",
		Short: "Remove a key: it no longer logs in",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCompany(g, cmd, args[0], func(ctx context.Context, a *app, companyID string) error {
				if err := a.commands.RemoveSFTPKey.Handle(cliContext(ctx), commands.RemoveSFTPKey{
					Principal: access.System(companyID), KeyID: args[1],
				}); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "removed sftp key %s\n", args[1])
				return nil
			})
		},
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}

// withCompany runs fn with an open app and the id of the company slug.
func withCompany(g *globals, cmd *cobra.Command, slug string, fn func(ctx context.Context, a *app, companyID string) error) error {
	return g.withApp(cmd, func(ctx context.Context, a *app) error {
		c, err := readmodels.NewCompanies(a.pool, "").BySlug(ctx, slug)
		if err != nil {
			return err
		}
		return fn(ctx, a, c.ID)
	})
}
