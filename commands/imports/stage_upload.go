package imports

import (
	"context"
	"io"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/storeerr"
)

// StageUpload stages an upload of records of one entity for the
// principal's company, and schedules it for the import worker. Any
// principal of the company may upload (a token without roles included);
// its scopes are checked at the edge. Whether it may delete and forget
// (mayDestroy) is recorded on the run: the records that do are rejected
// when they are applied, the others imported.
type StageUpload struct {
	Principal access.Principal
	Entity    importing.Entity
	Format    ingest.Format
	// Charset is the body's charset ("" is UTF-8; see ingest.NewRecords).
	Charset string
	// Body is read to its end, record by record.
	Body io.Reader
	// Source is recorded on the run and its events: "api" (any HTTP
	// upload, JSON or CSV), "cli", "sftp".
	// Empty takes the source of the context (WithRequest), else "api".
	Source string
	// RunID, when set, is the run's id, chosen and recorded by the caller
	// before staging (the SFTP drop directory, so that a file staged again
	// after a crash is the same run, never a second one). A run of that id
	// still receiving, left by a process killed while staging, is
	// discarded first; the caller must not stage again a run that was
	// scheduled. Empty is a fresh id.
	RunID string
}

// StagedUpload is a scheduled run.
type StagedUpload struct {
	RunID    string
	Received int
}

// StageUploadHandler handles StageUpload.
type StageUploadHandler struct {
	store  *Store
	limits ingest.Limits
}

// NewStageUploadHandler returns a handler that stages uploads in pool,
// sealed with keys (chunk_seal.go).
// It stages any importable entity: the callers offer only those that
// have an Importer (the API registers no upload route for the others).
func NewStageUploadHandler(pool *pgxpool.Pool, keys crypto.KeyStore, limits ingest.Limits) StageUploadHandler {
	if pool == nil {
		panic("imports: NewStageUploadHandler: nil pool")
	}
	return StageUploadHandler{store: NewStore(pool, keys), limits: limits}
}

// importable lists the entities that can be uploaded at all.
var importable = []importing.Entity{importing.Customers, importing.Events, importing.Products, importing.Sales, importing.Shops}

// Handle reads the whole body and returns the run once it is scheduled.
// A body that is not a valid upload is a domain.Invalid or
// domain.TooLarge error (UploadError), and leaves nothing scheduled. The staging
// store's errors come out typed (storeerr.Translate), as the errors of the
// other commands do (typedStore).
func (h StageUploadHandler) Handle(ctx context.Context, cmd StageUpload) (StagedUpload, error) {
	p := cmd.Principal
	if err := commands.RequireCompany(p); err != nil {
		return StagedUpload{}, err
	}
	if !slices.Contains(importable, cmd.Entity) {
		return StagedUpload{}, domain.Errorf(domain.Invalid, "%q cannot be imported; importable: %v", cmd.Entity, importable)
	}
	records, err := ingest.NewRecords(cmd.Body, cmd.Format, cmd.Charset, UploadShape(cmd.Entity), h.limits)
	if err != nil {
		return StagedUpload{}, UploadError(err)
	}
	md := commands.Metadata(ctx, p, p.CompanyID)
	if cmd.Source != "" {
		md.Source = cmd.Source
	}
	id := cmd.RunID
	if id == "" {
		id = commands.NewID()
	} else if err := h.store.DiscardUnscheduled(ctx, id); err != nil {
		return StagedUpload{}, storeerr.Translate(err)
	}
	run := Run{
		ID: id, CompanyID: p.CompanyID, Entity: cmd.Entity,
		Actor: md.Actor, Source: md.Source, CorrelationID: md.CorrelationID,
		MayDestroy: mayDestroy(p),
	}
	n, err := h.store.Stage(ctx, run, records, h.limits)
	if err != nil {
		return StagedUpload{}, storeerr.Translate(UploadError(err))
	}
	return StagedUpload{RunID: run.ID, Received: n}, nil
}

// mayDestroy reports whether p may delete or forget what cannot be
// brought back (customers, events) or destroy in bulk (a data query that
// deletes): the admin role (docs/access.md, "Destruction"). A token
// without roles, or a staff user's, may import but not destroy.
func mayDestroy(p access.Principal) bool { return access.IsAdmin(p) }

// MayDestroy reports whether p may delete or forget (mayDestroy), for an
// adapter that offers the act itself (the console's delete and forget
// buttons) and must refuse it before staging the record.
func MayDestroy(p access.Principal) bool { return mayDestroy(p) }

// reasonNeedsAdmin is the rejection of a record that deletes or forgets,
// sent by a principal that may not.
const reasonNeedsAdmin = "deleting and forgetting need the admin role: send this record with an admin's token"
