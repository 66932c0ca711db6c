package access

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// Integrations keeps the integrations table.
type Integrations struct{}

// Name implements Projector.
func (Integrations) Name() string { return "integrations" }

// Tables implements Projector.
func (Integrations) Tables() []string { return []string{"integrations"} }

type integrationRow struct {
	CompanyID       string    `json:"company_id"`
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	IntegrationName string    `json:"integration_name"`
	Description     string    `json:"description"`
	Enabled         bool      `json:"enabled"`
	CreatedBy       string    `json:"created_by"`
	CreatedAt       time.Time `json:"created_at"`
}

// Apply inserts the created integrations in one statement.
func (Integrations) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var rows []integrationRow
	for _, e := range events {
		if e.Type != access.IntegrationCreatedType {
			continue
		}
		var ev access.IntegrationCreated
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		rows = append(rows, integrationRow{
			CompanyID: e.Metadata.CompanyID, ID: ev.ID, Name: ev.Name, IntegrationName: ev.IntegrationName,
			Description: ev.Description, Enabled: ev.Enabled, CreatedBy: ev.CreatedBy, CreatedAt: ev.CreatedAt,
		})
	}
	return bulk.ExecRows(ctx, tx, "integrations", `
		INSERT INTO integrations (company_id, id, name, integration_name, description, enabled, created_by, created_at)
		SELECT company_id, id, name, integration_name, description, enabled, created_by, created_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, name text, integration_name text,
			description text, enabled boolean, created_by text, created_at timestamptz)
		ON CONFLICT (company_id, id) DO NOTHING`, rows)
}
