package readmodels

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// SFTPKeys reads the public keys registered for the companies' SFTP drop
// directories (table sftp_keys).
type SFTPKeys struct {
	db database
}

// NewSFTPKeys returns the queries on pool.
func NewSFTPKeys(pool *pgxpool.Pool) *SFTPKeys {
	if pool == nil {
		panic("readmodels: NewSFTPKeys: nil pool")
	}
	return &SFTPKeys{db: database{pool}}
}

const selectSFTPKey = `SELECT company_id, id, name, fingerprint, public_key, created_by, created_at FROM sftp_keys `

// List returns the company's keys, oldest first.
func (q *SFTPKeys) List(ctx context.Context, companyID string) ([]access.SFTPKey, error) {
	rows, err := q.db.Query(ctx, selectSFTPKey+`WHERE company_id = $1 ORDER BY created_at, id`, companyID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: sftp keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, scanSFTPKey)
	if err != nil {
		return nil, fmt.Errorf("readmodels: sftp keys: %w", err)
	}
	return keys, nil
}

// ByFingerprint returns the company's key with the SHA-256 fingerprint
// ("SHA256:..."), or a domain.NotFound error. Should the same key have
// been registered twice, the oldest registration answers.
func (q *SFTPKeys) ByFingerprint(ctx context.Context, companyID, fingerprint string) (access.SFTPKey, error) {
	rows, err := q.db.Query(ctx, selectSFTPKey+`WHERE company_id = $1 AND fingerprint = $2 ORDER BY created_at, id LIMIT 1`,
		companyID, fingerprint)
	if err != nil {
		return access.SFTPKey{}, fmt.Errorf("readmodels: sftp key: %w", err)
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanSFTPKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return access.SFTPKey{}, domain.Errorf(domain.NotFound, "no such SFTP key")
	}
	if err != nil {
		return access.SFTPKey{}, fmt.Errorf("readmodels: sftp key: %w", err)
	}
	return k, nil
}

func scanSFTPKey(row pgx.CollectableRow) (access.SFTPKey, error) {
	var k access.SFTPKey
	err := row.Scan(&k.CompanyID, &k.ID, &k.Name, &k.Fingerprint, &k.PublicKey, &k.CreatedBy, &k.CreatedAt)
	k.CreatedAt = k.CreatedAt.UTC()
	return k, err
}
