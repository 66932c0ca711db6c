package sftp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/sftp"
)

// uploadsFunc adapts a function to sftp.Uploads.
type uploadsFunc func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error)

func (f uploadsFunc) Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
	return f(ctx, cmd)
}

// TestSFTPRestartImportsOnce stops the server at each point between a
// complete upload and the file's move to processed/, and starts a new
// one on the same directory: each file is imported exactly once, with
// all its records.
func TestSFTPRestartImportsOnce(t *testing.T) {
	data := []byte("customer_id,email\nC1,c1@x.test\nC2,c2@x.test\nC3,c3@x.test\n")
	for _, tt := range []struct {
		name string
		// stage replaces the staging of the first server, which is
		// stopped while it blocks.
		stage func(e *env, real sftp.Uploads, entered chan<- struct{}) uploadsFunc
	}{
		{"before staging", func(e *env, real sftp.Uploads, entered chan<- struct{}) uploadsFunc {
			return func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
				entered <- struct{}{}
				<-ctx.Done()
				return imports.StagedUpload{}, ctx.Err()
			}
		}},
		{"while staging", func(e *env, real sftp.Uploads, entered chan<- struct{}) uploadsFunc {
			return func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
				// What a process killed while staging leaves: the run
				// receiving, a chunk staged.
				if _, err := e.pool.Exec(ctx, `INSERT INTO import_runs (id, company_id, entity, state, actor, source, correlation_id, may_destroy)
					VALUES ($1, $2, 'customers', 'receiving', 'x', 'sftp', 'x', false)`, cmd.RunID, cmd.Principal.CompanyID); err != nil {
					t.Error(err)
				}
				if _, err := e.pool.Exec(ctx, `INSERT INTO import_chunks (run_id, seq, first_index, records, payload) VALUES ($1, 0, 0, 1, '{"customer_id": "C1"}')`, cmd.RunID); err != nil {
					t.Error(err)
				}
				entered <- struct{}{}
				<-ctx.Done()
				return imports.StagedUpload{}, ctx.Err()
			}
		}},
		{"after scheduling", func(e *env, real sftp.Uploads, entered chan<- struct{}) uploadsFunc {
			return func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
				if _, err := real.Handle(ctx, cmd); err != nil {
					t.Error(err)
				}
				entered <- struct{}{}
				<-ctx.Done()
				return imports.StagedUpload{}, ctx.Err()
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			real := e.cfg.Uploads
			entered := make(chan struct{}, 1)
			e.cfg.Uploads = tt.stage(e, real, entered)
			e.restart()
			c := e.mustDial()
			put(t, c, "toclientele/customers.csv", data)
			<-entered
			c.Close()
			e.cfg.Uploads = real
			e.restart()
			c = e.mustDial()
			r := waitResult(t, c, "customers.csv")
			if r.State != "completed" || r.Accepted != 3 {
				t.Errorf("result %+v", r)
			}
			runs := e.runs(e.acme.ID)
			if len(runs) != 1 || runs[0].ID != r.RunID || runs[0].Received != 3 {
				t.Errorf("runs %+v, want one of 3 records, %s", runs, r.RunID)
			}
			if entries, _ := os.ReadDir(filepath.Join(e.cfg.Dir, "queue")); len(entries) != 0 {
				t.Errorf("the queue holds %d entries", len(entries))
			}
		})
	}
}

// TestSFTPRestartDeletesCutUploads: an upload in progress when the server
// stops is cut short: the new server deletes it and imports nothing.
func TestSFTPRestartDeletesCutUploads(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	f, err := c.Create("toclientele/customers.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("customer_id,email\nC1,c1@")); err != nil {
		t.Fatal(err)
	}
	// A leftover of a killed process, which could not clean up.
	if err := os.WriteFile(filepath.Join(e.cfg.Dir, "incoming", "0195leftover"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if entries, _ := os.ReadDir(filepath.Join(e.cfg.Dir, "incoming")); len(entries) != 0 {
		t.Errorf("incoming/ holds %d files", len(entries))
	}
	if runs := e.runs(e.acme.ID); len(runs) != 0 {
		t.Errorf("runs %v", runs)
	}
}
