package access

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// Users keeps the users table: the credentials checked by password
// authentication.
type Users struct{}

// Name implements Projector.
func (Users) Name() string { return "users" }

// Tables implements Projector.
func (Users) Tables() []string { return []string{"users"} }

type userRow struct {
	CompanyID    string        `json:"company_id"`
	ID           string        `json:"id"`
	Email        string        `json:"email"`
	Roles        []access.Role `json:"roles"`
	PasswordHash string        `json:"password_hash"`
	TOTPSecret   string        `json:"totp_secret"`
	CreatedAt    time.Time     `json:"created_at"`
}

// Apply inserts the created users in one statement.
func (Users) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var rows []userRow
	for _, e := range events {
		if e.Type != access.UserCreatedType {
			continue
		}
		var ev access.UserCreated
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		rows = append(rows, userRow{
			CompanyID: e.Metadata.CompanyID, ID: ev.ID, Email: ev.Email, Roles: bulk.OrNone(ev.Roles),
			PasswordHash: ev.PasswordHash, TOTPSecret: ev.TOTPSecret, CreatedAt: ev.CreatedAt,
		})
	}
	return bulk.ExecRows(ctx, tx, "users", `
		INSERT INTO users (company_id, id, email, roles, password_hash, totp_secret, created_at)
		SELECT company_id, id, email, roles, password_hash, totp_secret, created_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, email text, roles text[],
			password_hash text, totp_secret text, created_at timestamptz)
		ON CONFLICT (company_id, id) DO NOTHING`, rows)
}
