package access

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// AccessTokens keeps the access_tokens table, looked up by token hash on
// every request.
type AccessTokens struct{}

// Name implements Projector.
func (AccessTokens) Name() string { return "access_tokens" }

// Tables implements Projector.
func (AccessTokens) Tables() []string { return []string{"access_tokens"} }

type accessTokenRow struct {
	CompanyID        string         `json:"company_id"`
	ID               string         `json:"id"`
	TokenHash        string         `json:"token_hash"`
	OwnerID          string         `json:"owner_id"`
	Hint             string         `json:"hint"`
	Name             string         `json:"name"`
	CreatedBy        string         `json:"created_by"`
	CreatedAt        time.Time      `json:"created_at"`
	TransferredRoles []access.Role  `json:"transferred_roles"`
	Scopes           []access.Scope `json:"scopes"`
}

// Apply inserts the created tokens in one statement, then deletes the
// revoked ones in another (a token created and revoked in one batch is
// inserted, then deleted).
func (AccessTokens) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var rows []accessTokenRow
	var revoked []sftpKeyID
	for _, e := range events {
		if e.Type == access.AccessTokenRevokedType {
			var ev access.AccessTokenRevoked
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			revoked = append(revoked, sftpKeyID{CompanyID: e.Metadata.CompanyID, ID: ev.ID})
			continue
		}
		if e.Type != access.AccessTokenCreatedType {
			continue
		}
		var ev access.AccessTokenCreated
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		rows = append(rows, accessTokenRow{
			CompanyID: e.Metadata.CompanyID, ID: ev.ID, TokenHash: ev.TokenHash, OwnerID: ev.OwnerID,
			Hint: ev.Hint, Name: ev.Name, CreatedBy: ev.CreatedBy, CreatedAt: ev.CreatedAt,
			TransferredRoles: bulk.OrNone(ev.TransferredRoles), Scopes: bulk.OrNone(ev.Scopes),
		})
	}
	if err := bulk.ExecRows(ctx, tx, "access_tokens", `
		INSERT INTO access_tokens (company_id, id, token_hash, owner_id, hint, name, created_by, created_at, transferred_roles, scopes)
		SELECT company_id, id, token_hash, owner_id, hint, name, created_by, created_at, transferred_roles, scopes
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, token_hash text, owner_id text, hint text,
			name text, created_by text, created_at timestamptz, transferred_roles text[], scopes jsonb)
		ON CONFLICT (company_id, id) DO NOTHING`, rows); err != nil {
		return err
	}
	// The row goes: the token no longer authenticates (AuthenticateToken
	// looks it up by hash on every request).
	return bulk.ExecRows(ctx, tx, "access_tokens", `
		DELETE FROM access_tokens t USING jsonb_to_recordset($1::jsonb) AS r(company_id text, id text)
		WHERE t.company_id = r.company_id AND t.id = r.id`, revoked)
}
