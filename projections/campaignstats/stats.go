package campaignstats

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// CampaignStats keeps the statistics of campaigns (docs/campaigns.md,
// Statistics; migration 00027): async, like the other figures, from the
// campaigns' activations, their activity (events with a campaign_key)
// and the sales.
//
// The unit it decides is a member: one customer of one campaign. Each
// event touches members (an activity event its own; a sale every
// campaign its customer has activity of; an activation the members of
// the campaign with a counted sale in its window), and a touched
// member's part of the figures is decided again from what the tables
// hold after the batch (campaign.FiguresOf),
// whatever order things came in; what it changed is added to the
// campaign's totals. So the figures are a function of the set of events
// applied, never of their order, and a read is a few rows per campaign.
// Nothing personal is kept: customers are their internal ids.
type CampaignStats struct{}

// NewCampaignStats returns the projector.
func NewCampaignStats() *CampaignStats { return &CampaignStats{} }

// Name implements Projector.
func (*CampaignStats) Name() string { return "campaign_stats" }

// Tables implements Projector.
func (*CampaignStats) Tables() []string {
	return []string{"campaign_stats", "campaign_stats_events", "campaign_stats_members", "campaign_stats_sales",
		"campaign_stats_conversions", "campaign_stats_products"}
}

// EventTypes implements TypeFilter.
func (*CampaignStats) EventTypes() []string {
	return []string{campaign.CreatedType, campaign.UpdatedType, campaign.ActivatedType, campaign.PausedType, campaign.ResumedType,
		campaign.ArchivedType, activity.TypeRecorded, activity.TypeDeleted, sale.TypeUpserted, datatarget.CreatedType}
}

// campaignKeyField is how an event's campaign_key shows in its JSON.
var campaignKeyField = []byte(`"campaign_key"`)

// campaignRef names a campaign of a company.
type campaignRef struct{ company, key string }

// memberKey names a member: a customer of a campaign.
type memberKey struct{ company, campaign, customer string }

// statsEventRow is a campaign_stats_events row.
type statsEventRow struct {
	CompanyID, CampaignKey, CustomerID string
	EventID                            int64
	Figure                             campaign.Figure
	Date                               time.Time
}

// statsBatch is what one Apply collected from its events.
type statsBatch struct {
	// campaigns seen in a campaign's stream, with activated_at when the
	// batch activates them, and the time of their last event.
	campaigns   map[campaignRef]time.Time
	activations map[campaignRef]time.Time
	inserts     []statsEventRow
	deletes     []document.ActivityKey
	deletedAt   map[document.ActivityKey]time.Time
	// touched are the members to decide again, each with the time of the
	// last event that touched it.
	touched map[memberKey]time.Time
	// changed are the campaigns whose attributes, state or figures the
	// batch changed: each becomes a message of the company's datasync
	// datatargets of campaigns (sync.go), created in
	// syncCreated or before.
	changed     map[campaignRef]bool
	syncCreated []syncCreation
}

func (b *statsBatch) touch(k memberKey, at time.Time) {
	if at.After(b.touched[k]) {
		b.touched[k] = at
	}
}

// Apply implements Projector: the batch's campaigns, activity events and
// sales are written, then the members they touch decided again, then the
// datasync messages of the campaigns the batch changed written
// (sync.go), in a handful of round trips whatever the
// batch's size. A batch of several commits is applied in parts where a
// datatarget of campaigns starts or took its last change inside it
// (syncSegments), so that it takes exactly the changes after that.
func (p *CampaignStats) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	segments, err := syncSegments(ctx, tx, events)
	if err != nil {
		return err
	}
	for _, seg := range segments {
		if err := p.applyBatch(ctx, tx, seg); err != nil {
			return err
		}
	}
	return nil
}

// applyBatch applies events, as Apply, as one batch.
func (p *CampaignStats) applyBatch(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	b := statsBatch{campaigns: map[campaignRef]time.Time{}, activations: map[campaignRef]time.Time{},
		deletedAt: map[document.ActivityKey]time.Time{}, touched: map[memberKey]time.Time{}, changed: map[campaignRef]bool{}}
	var sales []statsSaleChange
	for i, e := range events {
		company, at := e.Metadata.CompanyID, e.RecordedAt.UTC()
		switch e.Type {
		case campaign.CreatedType, campaign.ActivatedType:
			ev, err := campaign.Decode(e.Type, e.Data)
			if err != nil {
				return fmt.Errorf("projections: campaign_stats: %s/%d: %w", e.StreamID, e.StreamVersion, err)
			}
			ref := campaignRef{company, ev.CampaignKey()}
			b.campaigns[ref] = at
			b.changed[ref] = true
			if a, ok := ev.(campaign.Activated); ok && !a.ActivatedAt.IsZero() {
				if _, set := b.activations[ref]; !set {
					b.activations[ref] = a.ActivatedAt.UTC()
				}
			}
		case campaign.UpdatedType, campaign.PausedType, campaign.ResumedType, campaign.ArchivedType:
			// No figure depends on them; the campaign's messages do.
			ev, err := campaign.Decode(e.Type, e.Data)
			if err != nil {
				return fmt.Errorf("projections: campaign_stats: %s/%d: %w", e.StreamID, e.StreamVersion, err)
			}
			b.changed[campaignRef{company, ev.CampaignKey()}] = true
		case datatarget.CreatedType:
			if err := b.noteDatatarget(e); err != nil {
				return err
			}
		case activity.TypeRecorded:
			// Most events are no campaign's activity: their JSON, which
			// names its fields plainly, has no campaign_key to decode.
			if !bytes.Contains(e.Data, campaignKeyField) {
				continue
			}
			var rec activity.Recorded
			if err := document.DecodeNumbersEvent(e, &rec); err != nil {
				return err
			}
			f, ok := campaign.ActivityFigure(rec.Type)
			key, _ := rec.Fields["campaign_key"].(string)
			// Trimmed as the event parser now does: events stored before
			// it did are a campaign's activity too.
			if key = strings.TrimSpace(key); !ok || key == "" {
				continue
			}
			date, err := time.Parse(time.RFC3339Nano, rec.Date)
			if err != nil {
				return fmt.Errorf("projections: campaign_stats: date of event %d: %w", rec.ID, err)
			}
			b.inserts = append(b.inserts, statsEventRow{CompanyID: company, EventID: rec.ID, CampaignKey: key,
				CustomerID: rec.CustomerID, Figure: f, Date: date.UTC()})
			b.touch(memberKey{company, key, rec.CustomerID}, at)
		case activity.TypeDeleted:
			var d activity.Deleted
			if err := bulk.Decode(e, &d); err != nil {
				return err
			}
			k := document.ActivityKey{Company: company, ID: d.ID}
			b.deletes = append(b.deletes, k)
			b.deletedAt[k] = at
		case sale.TypeUpserted:
			c := statsSaleChange{e: &events[i]}
			if err := document.DecodeNumbersEvent(e, &c.data); err != nil {
				return err
			}
			sales = append(sales, c)
		}
	}
	if len(b.changed) == 0 && len(b.inserts) == 0 && len(b.deletes) == 0 && len(sales) == 0 && len(b.syncCreated) == 0 {
		return nil
	}
	if err := b.writeCampaigns(ctx, tx); err != nil {
		return err
	}
	if err := b.writeEvents(ctx, tx); err != nil {
		return err
	}
	if err := writeStatsSales(ctx, tx, sales, b.touch); err != nil {
		return err
	}
	if err := decideMembers(ctx, tx, b.touched, b.changed); err != nil {
		return err
	}
	last := events[len(events)-1]
	return b.syncCampaigns(ctx, tx, last.Position, last.RecordedAt)
}

// writeCampaigns records the batch's campaigns and their activations. A
// campaign's activated_at never moves once set (the domain refuses it),
// so only the first one counts; a new activation touches the members of
// the campaign its window gives sales figures.
func (b *statsBatch) writeCampaigns(ctx context.Context, tx pgx.Tx) error {
	if len(b.campaigns) == 0 {
		return nil
	}
	n := len(b.campaigns)
	companies, keys, activated, at := make([]string, 0, n), make([]string, 0, n), make([]*time.Time, 0, n), make([]time.Time, 0, n)
	for ref, t := range b.campaigns {
		companies, keys, at = append(companies, ref.company), append(keys, ref.key), append(at, t)
		var a *time.Time
		if v, ok := b.activations[ref]; ok {
			a = &v
		}
		activated = append(activated, a)
	}
	// The campaign's figures are computed from its creation on: its
	// cache_modified_at is that time when nothing changed them since.
	rows, err := tx.Query(ctx, `
		WITH r AS (SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[])
			AS r(company_id, campaign_key, activated_at, at)),
		old AS (SELECT s.company_id, s.campaign_key, s.activated_at FROM campaign_stats s JOIN r USING (company_id, campaign_key)),
		up AS (INSERT INTO campaign_stats AS s (company_id, campaign_key, activated_at, modified_at)
			SELECT company_id, campaign_key, activated_at, at FROM r
			ON CONFLICT (company_id, campaign_key) DO UPDATE SET
				activated_at = coalesce(s.activated_at, EXCLUDED.activated_at),
				modified_at = CASE WHEN s.activated_at IS NULL AND EXCLUDED.activated_at IS NOT NULL
					THEN greatest(s.modified_at, EXCLUDED.modified_at) ELSE s.modified_at END)
		SELECT r.company_id, r.campaign_key FROM r LEFT JOIN old USING (company_id, campaign_key)
		WHERE r.activated_at IS NOT NULL AND old.activated_at IS NULL`, companies, keys, activated, at)
	if err != nil {
		return fmt.Errorf("projections: campaign_stats: campaigns: %w", err)
	}
	var opened []campaignRef
	var ref campaignRef
	if _, err := pgx.ForEachRow(rows, []any{&ref.company, &ref.key}, func() error {
		opened = append(opened, ref)
		return nil
	}); err != nil {
		return fmt.Errorf("projections: campaign_stats: campaigns: %w", err)
	}
	// Before its activation a campaign has no window, so its members have
	// no sales figures; the activation changes only those of the members
	// with a counted sale inside the new window (their activity figures
	// do not depend on it). An activation of a campaign sent to a million
	// customers so decides again its buyers, not its whole audience. The
	// batch's own sales and activity touch their members themselves.
	for _, ref := range opened {
		rows, err := tx.Query(ctx, `SELECT m.customer_id FROM campaign_stats c
			JOIN campaign_stats_members m USING (company_id, campaign_key)
			WHERE c.company_id = $1 AND c.campaign_key = $2 AND EXISTS (SELECT 1 FROM campaign_stats_sales s
				WHERE s.company_id = m.company_id AND s.customer_id = m.customer_id AND s.counted
					AND s.sale_date BETWEEN c.activated_at AND c.activated_at + $3::bigint * interval '1 microsecond')`,
			ref.company, ref.key, campaign.WindowLength.Microseconds())
		if err != nil {
			return fmt.Errorf("projections: campaign_stats: members of %s: %w", ref.key, err)
		}
		var customer string
		if _, err := pgx.ForEachRow(rows, []any{&customer}, func() error {
			b.touch(memberKey{ref.company, ref.key, customer}, b.campaigns[ref])
			return nil
		}); err != nil {
			return fmt.Errorf("projections: campaign_stats: members of %s: %w", ref.key, err)
		}
	}
	return nil
}

// writeEvents inserts the batch's campaign activity and deletes the
// events deleted, touching their members. Inserts go first: an event
// deleted in the batch that recorded it (a rebuild's page) is gone.
func (b *statsBatch) writeEvents(ctx context.Context, tx pgx.Tx) error {
	if n := len(b.inserts); n > 0 {
		// As columns: a thousand rows a commit, no JSON to write and parse.
		companies, ids, keys, customers := make([]string, n), make([]int64, n), make([]string, n), make([]string, n)
		figures, dates := make([]int16, n), make([]time.Time, n)
		for i, r := range b.inserts {
			companies[i], ids[i], keys[i], customers[i], figures[i], dates[i] = r.CompanyID, r.EventID, r.CampaignKey, r.CustomerID, int16(r.Figure), r.Date
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO campaign_stats_events (company_id, event_id, campaign_key, customer_id, figure, date)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::smallint[], $6::timestamptz[])
			ON CONFLICT (company_id, event_id) DO NOTHING`, companies, ids, keys, customers, figures, dates); err != nil {
			return fmt.Errorf("projections: campaign_stats: events: %w", err)
		}
	}
	if len(b.deletes) == 0 {
		return nil
	}
	companies, ids := make([]string, len(b.deletes)), make([]int64, len(b.deletes))
	for i, k := range b.deletes {
		companies[i], ids[i] = k.Company, k.ID
	}
	rows, err := tx.Query(ctx, `
		DELETE FROM campaign_stats_events e USING unnest($1::text[], $2::bigint[]) AS d(company_id, event_id)
		WHERE e.company_id = d.company_id AND e.event_id = d.event_id
		RETURNING e.company_id, e.event_id, e.campaign_key, e.customer_id`, companies, ids)
	if err != nil {
		return fmt.Errorf("projections: campaign_stats: delete events: %w", err)
	}
	var k document.ActivityKey
	var m memberKey
	_, err = pgx.ForEachRow(rows, []any{&k.Company, &k.ID, &m.campaign, &m.customer}, func() error {
		m.company = k.Company
		b.touch(m, b.deletedAt[k])
		return nil
	})
	if err != nil {
		return fmt.Errorf("projections: campaign_stats: delete events: %w", err)
	}
	return nil
}

// AppliesPages implements PageApplier: a page of commits costs much less
// than its commits one by one (a member touched by several is decided
// once, the campaigns' totals written once), which is how the projector
// catches up with an import that outpaces it.
func (*CampaignStats) AppliesPages() {}
