package access

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// SFTPKeys keeps the sftp_keys table, read by the SFTP server at every
// key log-in. It is inline: a removed key must stop logging in at once.
type SFTPKeys struct{}

// Name implements Projector.
func (SFTPKeys) Name() string { return "sftp_keys" }

// Tables implements Projector.
func (SFTPKeys) Tables() []string { return []string{"sftp_keys"} }

type sftpKeyRow struct {
	CompanyID   string    `json:"company_id"`
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Fingerprint string    `json:"fingerprint"`
	PublicKey   string    `json:"public_key"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
}

type sftpKeyID struct {
	CompanyID string `json:"company_id"`
	ID        string `json:"id"`
}

// Apply inserts the added keys and deletes the removed ones, one statement
// each. A key is added and removed in commits of its own, so the order
// within one commit does not matter.
func (SFTPKeys) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var added []sftpKeyRow
	var removed []sftpKeyID
	for _, e := range events {
		switch e.Type {
		case access.SFTPKeyAddedType:
			var ev access.SFTPKeyAdded
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			added = append(added, sftpKeyRow{
				CompanyID: e.Metadata.CompanyID, ID: ev.ID, Name: ev.Name, Fingerprint: ev.Fingerprint,
				PublicKey: ev.PublicKey, CreatedBy: ev.CreatedBy, CreatedAt: ev.CreatedAt,
			})
		case access.SFTPKeyRemovedType:
			var ev access.SFTPKeyRemoved
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			removed = append(removed, sftpKeyID{CompanyID: e.Metadata.CompanyID, ID: ev.ID})
		}
	}
	if err := bulk.ExecRows(ctx, tx, "sftp_keys", `
		INSERT INTO sftp_keys (company_id, id, name, fingerprint, public_key, created_by, created_at)
		SELECT company_id, id, name, fingerprint, public_key, created_by, created_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, name text, fingerprint text,
			public_key text, created_by text, created_at timestamptz)
		ON CONFLICT (company_id, id) DO NOTHING`, added); err != nil {
		return err
	}
	return bulk.ExecRows(ctx, tx, "sftp_keys", `
		DELETE FROM sftp_keys k USING jsonb_to_recordset($1::jsonb) AS r(company_id text, id text)
		WHERE k.company_id = r.company_id AND k.id = r.id`, removed)
}
