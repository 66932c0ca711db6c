package datasync

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
)

// anonymiseStored rewrites the stored messages about forgotten entities
// in the forgotten form, keeping each message's is_deleted, as a rebuild
// (with the key gone) would have written them; and it erases the raw
// request and reply of every outlet attempt that carried one of them, so
// that no table keeps the person's data. The outlets' workers are ordered
// against it by the advisory lock datatarget.ForgetLockClass.
//
// It writes outlet_log, which is the delivery workers' table and not this
// projector's: a rebuild runs it again, harmlessly (the raw texts are gone
// already, and the rebuilt rows need no rewrite).
func anonymiseStored(ctx context.Context, tx pgx.Tx, dt datatarget.Datatype, forgets []forgetting) error {
	return rewriteStored(ctx, tx, "datasync_messages", forgets, func(entity, updateID string, deleted bool, _ []byte) ([]byte, error) {
		return EncodeSyncMessage(updateID, dt, forgottenData(entity, deleted))
	})
}

// RemoveFieldsIn removes fields from the data of every message about
// entity stored in the datatargets targets of table, a queue of
// datasync_messages' shape written by another projector (the
// segment_members projection's segment_sync_messages), and erases the
// raw texts of the outlet attempts that carried a message it changed:
// the forgetting of a personal feed (events_forget.go), under the same
// advisory locks.
func RemoveFieldsIn(ctx context.Context, tx pgx.Tx, table string, targets []string, entity string, fields []string) error {
	return rewriteStored(ctx, tx, table, []forgetting{{entity: entity, targets: targets}}, withoutFields(fields))
}

// rewriteStored is anonymiseStored with the queue table and the rewrite
// of a message given: rewrite returns the new body of the message about
// entity (its update_id, is_deleted and body as stored). Personal feeds
// (events, sales) remove fields instead of writing the forgotten form.
func rewriteStored(ctx context.Context, tx pgx.Tx, table string, forgets []forgetting,
	rewrite func(entity, updateID string, deleted bool, body []byte) ([]byte, error)) error {
	var targets, entities []string
	for _, f := range forgets {
		for _, t := range f.targets {
			targets, entities = append(targets, t), append(entities, f.entity)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	locks := slices.Compact(slices.Sorted(slices.Values(targets))) // one order for all: no deadlock
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(t)) FROM unnest($2::text[]) AS t`,
		datatarget.ForgetLockClass, locks); err != nil {
		return fmt.Errorf("projections: datasync: anonymise: lock: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT m.datatarget_id, m.number, m.entity_id, m.update_id,
			coalesce((m.body->'data'->>'is_deleted')::boolean, false), m.body
		FROM `+pgx.Identifier{table}.Sanitize()+` m JOIN unnest($1::text[], $2::text[]) AS f(datatarget_id, entity_id)
			ON m.datatarget_id = f.datatarget_id AND m.entity_id = f.entity_id`, targets, entities)
	if err != nil {
		return fmt.Errorf("projections: datasync: anonymise: %w", err)
	}
	var ids []string
	var numbers []int64
	var bodies [][]byte
	var id, entity, updateID string
	var number int64
	var deleted bool
	var stored []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &number, &entity, &updateID, &deleted, &stored}, func() error {
		body, err := rewrite(entity, updateID, deleted, stored)
		ids, numbers, bodies = append(ids, id), append(numbers, number), append(bodies, body)
		return err
	})
	if err != nil {
		return fmt.Errorf("projections: datasync: anonymise: %w", err)
	}
	// Rows already in the forgotten form are left alone (no new version),
	// and so are the attempts that carried only those.
	_, err = tx.Exec(ctx, `WITH changed AS (
			UPDATE `+pgx.Identifier{table}.Sanitize()+` m SET body = u.body
			FROM unnest($1::text[], $2::bigint[], $3::json[]) AS u(datatarget_id, number, body)
			WHERE m.datatarget_id = u.datatarget_id AND m.number = u.number AND m.body::text <> u.body::text
			RETURNING m.datatarget_id, m.number)
		UPDATE outlet_log l SET http_request = '', http_reply = '', http_request_available = false,
			raw_key = NULL, sealed_request = NULL, sealed_reply = NULL
		FROM changed c JOIN datatarget_outlets o ON o.datatarget_id = c.datatarget_id
		WHERE l.outlet_id = o.id AND l.first_message_number <= c.number AND l.first_message_number > c.number - $4
			AND c.number < l.first_message_number + l.batch_size AND (l.http_request <> '' OR l.http_reply <> '' OR l.raw_key IS NOT NULL)`,
		ids, numbers, bodies, datatarget.BatchedMaxBatchSize)
	if err != nil {
		return fmt.Errorf("projections: datasync: anonymise: %w", err)
	}
	return nil
}
