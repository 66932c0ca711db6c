package campaignstats

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datasync"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/readmodels"
)

// Datasync of campaigns (docs/campaigns.md, Datasync; migration 00029).
//
// A datasync datatarget of datatype campaigns takes each campaign, with
// its statistics, after each change of the campaign or of its figures.
// The figures are this projection's, so it writes those messages itself:
// after applying a batch (a commit, a page of commits when it catches up
// or rebuilds), in the same transaction, one message per datatarget of
// the company for each campaign the batch changed, the campaign read
// as GET /api/campaign/actions/ answers it (readmodels, within the
// transaction: its own new figures). The messages are numbered and
// encoded as the datasync projection's (syncRows, encodeSyncMessage,
// restrict), into queues of their own (campaign_sync_targets and
// campaign_sync_messages), which retrieval and outlets read as they read
// the datasync projection's.
//
// Exactly once: the messages and the checkpoint are in one transaction,
// and a datatarget records the log position of the last batch it took
// and takes none that ends at or before it; so a batch applied again,
// and a rebuild replaying the log, send nothing twice (the queues are not
// rebuilt: a rebuild's pages are not the commits the messages were for).

// campaignsAlwaysSent are the fields every campaigns message carries
// whatever the datatarget's fields: the campaign's identity.
var campaignsAlwaysSent = []string{"campaign_key"}

// syncCreation is a datasync datatarget of campaigns created in a batch.
type syncCreation struct {
	id, company string
	fields      []string
	fromStart   bool
	at          eventstore.Position
}

// campaignSyncTarget is a campaign_sync_targets row.
type campaignSyncTarget struct {
	id, company string
	fields      []string
	last        int64
	applied     eventstore.Position
	fromStart   bool // created in this batch with from_start
}

// syncSegments splits a batch of several commits (a page of the paged
// catch-up or of a rebuild) after each position inside it where a
// datatarget of campaigns of its companies starts (a DatatargetCreated)
// or took its last change (applied, written by the live projector before
// a rebuild reaches it). A batch's messages are the campaigns it changed,
// which it does not tell apart by position: whole, it would give such a
// datatarget the campaigns changed before its creation, or send again
// those it took. In parts, each datatarget is before or after each part.
// The figures come out the same however the events are grouped, an event
// at a time included (TestCampaignStatsProjectionBatching); a batch of
// one commit, the live case, is never split.
//
// The datatargets are locked here, in one statement in datatarget order
// (as lockSyncTargets locks them), until the end of the transaction: a
// rebuild and the live projector both write them, and applied must not
// move between this read and the batch's messages; locked in one
// statement rather than part by part, the parts of two such batches
// cannot deadlock.
func syncSegments(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) ([][]eventstore.RecordedEvent, error) {
	if len(events) == 0 || events[0].Position.TxID == events[len(events)-1].Position.TxID {
		return [][]eventstore.RecordedEvent{events}, nil
	}
	first, last := events[0].Position, events[len(events)-1].Position
	var cuts []eventstore.Position
	seen := map[string]bool{}
	var companies []string
	for _, e := range events {
		if !seen[e.Metadata.CompanyID] {
			seen[e.Metadata.CompanyID] = true
			companies = append(companies, e.Metadata.CompanyID)
		}
		if e.Type == datatarget.CreatedType {
			cuts = append(cuts, e.Position)
		}
	}
	rows, err := tx.Query(ctx, `SELECT applied_tx::text, applied_position FROM campaign_sync_targets
		WHERE company_id = ANY($1) ORDER BY datatarget_id FOR UPDATE`, companies)
	if err != nil {
		return nil, fmt.Errorf("projections: campaign_stats: datasync targets: %w", err)
	}
	var at eventstore.Position
	if _, err := pgx.ForEachRow(rows, []any{projections.TxID{To: &at.TxID}, &at.Global}, func() error {
		if !at.Less(first) && at.Less(last) {
			cuts = append(cuts, at)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("projections: campaign_stats: datasync targets: %w", err)
	}
	if len(cuts) == 0 {
		return [][]eventstore.RecordedEvent{events}, nil
	}
	slices.SortFunc(cuts, func(a, b eventstore.Position) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	})
	// A part ends after event i when a cut is at or after it and before
	// the next event.
	var out [][]eventstore.RecordedEvent
	start, c := 0, 0
	for i := range len(events) - 1 {
		for c < len(cuts) && cuts[c].Less(events[i].Position) {
			c++
		}
		if c < len(cuts) && cuts[c].Less(events[i+1].Position) {
			out = append(out, events[start:i+1])
			start = i + 1
		}
	}
	return append(out, events[start:]), nil
}

// noteDatatarget records e, a DatatargetCreated, when it creates a
// datasync datatarget of campaigns.
func (b *statsBatch) noteDatatarget(e eventstore.RecordedEvent) error {
	var ev datatarget.Created
	if err := bulk.Decode(e, &ev); err != nil {
		return err
	}
	if ev.Type != datatarget.Datasync || ev.Settings == nil || ev.Settings.Datatype != datatarget.Campaigns {
		return nil
	}
	b.syncCreated = append(b.syncCreated, syncCreation{id: ev.ID, company: e.Metadata.CompanyID, fields: ev.Settings.Fields,
		fromStart: ev.Settings.FromStart, at: e.Position})
	return nil
}

// syncCampaigns writes the datasync messages of the campaigns the batch
// changed (b.changed), ending at last, recorded at at.
func (b *statsBatch) syncCampaigns(ctx context.Context, tx pgx.Tx, last eventstore.Position, at time.Time) error {
	companies := map[string]bool{}
	for ref := range b.changed {
		companies[ref.company] = true
	}
	for _, c := range b.syncCreated {
		companies[c.company] = true
	}
	if len(companies) == 0 {
		return nil
	}
	targets, err := b.lockSyncTargets(ctx, tx, slices.Sorted(maps.Keys(companies)))
	if err != nil || len(targets) == 0 {
		return err
	}
	byCompany := map[string][]*campaignSyncTarget{}
	for _, t := range targets {
		if t.applied.Less(last) || t.fromStart {
			byCompany[t.company] = append(byCompany[t.company], t)
		}
	}
	updateID := strconv.FormatInt(last.Global, 10)
	var rows datasync.SyncRows
	for _, co := range slices.Sorted(maps.Keys(byCompany)) {
		ts := byCompany[co]
		var keys []string
		for ref := range b.changed {
			if ref.company == co {
				keys = append(keys, ref.key)
			}
		}
		all := slices.ContainsFunc(ts, func(t *campaignSyncTarget) bool { return t.fromStart })
		if len(keys) == 0 && !all {
			continue
		}
		slices.Sort(keys)
		states, err := campaignStates(ctx, tx, co, keys, all)
		if err != nil {
			return err
		}
		for _, t := range ts {
			for _, st := range states {
				if !t.fromStart && !slices.Contains(keys, st.key) {
					continue
				}
				body, err := datasync.EncodeSyncMessage(updateID, datatarget.Campaigns, datasync.Restrict(st.fields, campaignsAlwaysSent, t.fields))
				if err != nil {
					return err
				}
				t.last++
				rows.Add(t.id, co, st.key, updateID, t.last, body, at, false)
			}
			t.applied = last
		}
	}
	if err := rows.InsertInto(ctx, tx, "campaign_sync_messages"); err != nil {
		return err
	}
	ids, numbers, xids, positions := []string{}, []int64{}, []string{}, []int64{}
	for _, ts := range byCompany {
		for _, t := range ts {
			ids, numbers = append(ids, t.id), append(numbers, t.last)
			xids, positions = append(xids, strconv.FormatUint(t.applied.TxID, 10)), append(positions, t.applied.Global)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE campaign_sync_targets t SET last_message_number = u.last, applied_tx = u.tx::xid8,
			applied_position = u.position
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS u(id, last, tx, position)
		WHERE t.datatarget_id = u.id`, ids, numbers, xids, positions); err != nil {
		return fmt.Errorf("projections: campaign_stats: datasync targets: %w", err)
	}
	return nil
}

// lockSyncTargets records the batch's new datatargets and returns the
// datatargets of the companies, locked: a rebuild writes them too.
func (b *statsBatch) lockSyncTargets(ctx context.Context, tx pgx.Tx, companies []string) ([]*campaignSyncTarget, error) {
	var batch pgx.Batch
	var created []string
	if n := len(b.syncCreated); n > 0 {
		// The existing datatargets first, then the new ones: so does
		// every writer (syncSegments), and one that inserted a new
		// datatarget waits for no lock the other holds while the other
		// waits for that insert (a rebuild and the live projector
		// applying the same creation).
		batch.Queue(`SELECT FROM campaign_sync_targets WHERE company_id = ANY($1) ORDER BY datatarget_id FOR UPDATE`, companies)
		ids, cos, fields, xids, positions := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
		for i, c := range b.syncCreated {
			f, err := json.Marshal(c.fields)
			if err != nil {
				return nil, err
			}
			ids[i], cos[i], fields[i] = c.id, c.company, string(f)
			xids[i], positions[i] = strconv.FormatUint(c.at.TxID, 10), c.at.Global
		}
		// A datatarget takes the changes after its creation; one created
		// again (a batch applied twice, a rebuild) is left as it is.
		batch.Queue(`INSERT INTO campaign_sync_targets (datatarget_id, company_id, fields, applied_tx, applied_position)
			SELECT id, company_id, CASE WHEN f = 'null' THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(f::jsonb)) END,
				tx::xid8, position
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(id, company_id, f, tx, position)
			ON CONFLICT (datatarget_id) DO NOTHING RETURNING datatarget_id`, ids, cos, fields, xids, positions).Query(func(rows pgx.Rows) error {
			var err error
			created, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
	}
	var out []*campaignSyncTarget
	batch.Queue(`SELECT datatarget_id, company_id, fields, last_message_number, applied_tx::text, applied_position
		FROM campaign_sync_targets WHERE company_id = ANY($1) ORDER BY datatarget_id FOR UPDATE`, companies).Query(func(rows pgx.Rows) error {
		var t campaignSyncTarget
		_, err := pgx.ForEachRow(rows, []any{&t.id, &t.company, &t.fields, &t.last, projections.TxID{To: &t.applied.TxID}, &t.applied.Global}, func() error {
			c := t
			out = append(out, &c)
			return nil
		})
		return err
	})
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, fmt.Errorf("projections: campaign_stats: datasync targets: %w", err)
	}
	for _, t := range out {
		if !slices.Contains(created, t.id) {
			continue
		}
		for _, c := range b.syncCreated {
			// from_start: every campaign as it is now, as the
			// datatarget's first messages.
			if c.id == t.id && c.fromStart {
				t.fromStart = true
			}
		}
	}
	return out, nil
}

// campaignState is a campaign with its statistics, as a message's data.
type campaignState struct {
	key    string
	fields map[string]json.RawMessage
}

// campaignStates reads the company's campaigns of keys (all of them when
// all), with their statistics, as GET /api/campaign/actions/ answers them,
// within tx, in key order. Keys of no campaign (activity of a campaign
// not created yet) have none.
func campaignStates(ctx context.Context, tx pgx.Tx, companyID string, keys []string, all bool) ([]campaignState, error) {
	var tz string
	if err := tx.QueryRow(ctx, `SELECT timezone FROM companies WHERE id = $1`, companyID).Scan(&tz); err != nil && err != pgx.ErrNoRows {
		return nil, fmt.Errorf("projections: campaign_stats: company %s: %w", companyID, err)
	}
	q := readmodels.StatsQuery{CompanyID: companyID, Ascending: true, Limit: readmodels.StatsMaxLimit,
		Location: company.Company{Timezone: tz}.Location()}
	var out []campaignState
	read := func(q readmodels.StatsQuery) error {
		for {
			page, err := readmodels.CampaignsIn(tx).CampaignStats(ctx, q)
			if err != nil {
				return fmt.Errorf("projections: campaign_stats: datasync: %w", err)
			}
			for _, cs := range page.Campaigns {
				st, err := encodeCampaignState(cs)
				if err != nil {
					return err
				}
				out = append(out, st)
			}
			if page.Next == "" {
				return nil
			}
			q.After = page.Next
		}
	}
	if all {
		if err := read(q); err != nil {
			return nil, err
		}
	} else {
		for chunk := range slices.Chunk(keys, readmodels.StatsMaxLimit) {
			q.Keys = chunk
			if err := read(q); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(out, func(a, b campaignState) int {
		if a.key < b.key {
			return -1
		}
		if a.key > b.key {
			return 1
		}
		return 0
	})
	return out, nil
}

func encodeCampaignState(cs readmodels.CampaignStats) (campaignState, error) {
	st := campaignState{key: cs.Campaign.Key}
	j, err := json.Marshal(readmodels.CampaignStatsJSON{CampaignJSON: readmodels.NewCampaignJSON(cs.Campaign), Stats: cs.Stats})
	if err == nil {
		err = json.Unmarshal(j, &st.fields)
	}
	if err != nil {
		return st, fmt.Errorf("projections: campaign_stats: datasync of %s: %w", cs.Campaign.Key, err)
	}
	return st, nil
}
