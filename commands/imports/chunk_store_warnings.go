package imports

import (
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/importing"
)

// queueWarnings adds a chunk's warnings to its run's (import_warnings), in
// the chunk's transaction: the count of a field the run lists already
// grows, its first_index stays the least; a new field is listed while the
// run lists fewer than importing.MaxWarnings, the chunk's first ones
// first. It is queued after the update of the run's counts, whose row
// lock makes chunks of one run that finish at once take turns, so that
// neither inserts a field the other has, nor counts the run's fields
// before the other's are in.
func queueWarnings(b *pgx.Batch, runID string, warnings []importing.Warning) {
	if len(warnings) == 0 {
		return
	}
	fields := make([]string, len(warnings))
	counts := make([]int64, len(warnings))
	firsts := make([]int64, len(warnings))
	for i, w := range warnings {
		fields[i], counts[i], firsts[i] = w.Field, int64(w.Count), int64(w.FirstIndex)
	}
	b.Queue(`UPDATE import_warnings w SET count = w.count + u.count, first_index = least(w.first_index, u.first_index)
		FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(field, count, first_index)
		WHERE w.run_id = $1 AND w.field = u.field`, runID, fields, counts, firsts)
	b.Queue(`INSERT INTO import_warnings (run_id, field, count, first_index)
		SELECT $1, u.field, u.count, u.first_index
		FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS u(field, count, first_index, ord)
		WHERE NOT EXISTS (SELECT 1 FROM import_warnings w WHERE w.run_id = $1 AND w.field = u.field)
		ORDER BY u.ord
		LIMIT greatest(0, $5 - (SELECT count(*) FROM import_warnings WHERE run_id = $1))`,
		runID, fields, counts, firsts, importing.MaxWarnings)
}
