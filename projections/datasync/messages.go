package datasync

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
)

// syncMessage is a datasync message as it is queued and delivered.
type syncMessage struct {
	// UpdateID identifies the change: the global position of its event,
	// unique in the log and the same in every rebuild.
	UpdateID string              `json:"update_id"`
	Datatype datatarget.Datatype `json:"datatype"`
	// Data is the entity after the change. Its keys are encoded sorted,
	// so that the same entity gives the same bytes, live or rebuilt.
	Data map[string]json.RawMessage `json:"data"`
}

// Restrict returns the fields of data a datatarget with fields takes:
// those, and always (the feed's alwaysSent) besides.
func Restrict(data map[string]json.RawMessage, always, fields []string) map[string]json.RawMessage {
	if fields == nil {
		return data
	}
	out := make(map[string]json.RawMessage, len(fields)+len(always))
	for _, list := range [][]string{always, fields} {
		for _, f := range list {
			if v, ok := data[f]; ok {
				out[f] = v
			}
		}
	}
	return out
}

// forgottenData is all a message about a forgotten entity holds, whatever
// the datatarget's fields: the form retrieval answers it in.
func forgottenData(id string, deleted bool) map[string]json.RawMessage {
	idJSON, _ := json.Marshal(id)
	return map[string]json.RawMessage{
		"id": idJSON, "is_deleted": json.RawMessage(fmt.Sprint(deleted)), "is_forgotten": json.RawMessage("true"),
	}
}

// EncodeSyncMessage encodes a datasync message: its update id, its
// datatype and its data.
func EncodeSyncMessage(updateID string, dt datatarget.Datatype, data map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(syncMessage{UpdateID: updateID, Datatype: dt, Data: data})
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: encode message %s: %w", updateID, err)
	}
	return b, nil
}

// SyncRows are new datasync_messages rows, as columns.
type SyncRows struct {
	targets, companies, entities, updateIDs []string
	numbers                                 []int64
	bodies                                  [][]byte
	postedAt                                []time.Time
	deleted                                 []bool // the entity's is_deleted, to anonymise the row
}

// Add adds a message of the entity to the rows.
func (r *SyncRows) Add(target, company, entity, updateID string, number int64, body []byte, at time.Time, deleted bool) {
	r.targets, r.companies, r.entities, r.updateIDs = append(r.targets, target), append(r.companies, company), append(r.entities, entity), append(r.updateIDs, updateID)
	r.numbers, r.bodies, r.postedAt, r.deleted = append(r.numbers, number), append(r.bodies, body), append(r.postedAt, at), append(r.deleted, deleted)
}

// insert writes the rows in one statement.
func (r *SyncRows) insert(ctx context.Context, tx pgx.Tx) error {
	return r.InsertInto(ctx, tx, "datasync_messages")
}

// InsertInto writes the rows into table, a queue of datasync_messages'
// shape (the campaign_stats projection's campaign_sync_messages too).
func (r *SyncRows) InsertInto(ctx context.Context, tx pgx.Tx, table string) error {
	if len(r.numbers) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{table}.Sanitize()+` (datatarget_id, number, company_id, entity_id, update_id, body, posted_at)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::json[], $7::timestamptz[])`,
		r.targets, r.numbers, r.companies, r.entities, r.updateIDs, r.bodies, r.postedAt)
	if err != nil {
		return fmt.Errorf("projections: datasync: write messages: %w", err)
	}
	return nil
}
