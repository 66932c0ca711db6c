package datatargets

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// messageRows collects the messages of the datatargets projector, per
// datatarget, in the order they arrive.
type messageRows struct {
	order []*datatargetQueue
	byID  map[string]*datatargetQueue
}

// datatargetQueue holds the new messages of one datatarget, as columns.
type datatargetQueue struct {
	companyID, datatargetID string
	numbers                 []int64
	bodies                  [][]byte
	postedAt                []time.Time
	last                    int64
}

func (m *messageRows) add(e eventstore.RecordedEvent) error {
	id, ok := datatarget.DatatargetOfMessagesStream(e.StreamID)
	if !ok {
		return fmt.Errorf("projections: %s in stream %q, not a datatarget's messages stream", e.Type, e.StreamID)
	}
	q := m.byID[id]
	if q == nil {
		if m.byID == nil {
			m.byID = map[string]*datatargetQueue{}
		}
		q = &datatargetQueue{companyID: e.Metadata.CompanyID, datatargetID: id}
		m.byID[id] = q
		m.order = append(m.order, q)
	}
	// The message's number is its version in the messages stream.
	q.numbers = append(q.numbers, e.StreamVersion)
	q.bodies = append(q.bodies, e.Data)
	q.postedAt = append(q.postedAt, e.RecordedAt)
	q.last = max(q.last, e.StreamVersion)
	return nil
}

// queue adds one insert per datatarget (the rows as arrays: a post of
// 1,000 messages is one statement) and the update of its counter.
func (m *messageRows) queue(b *pgx.Batch) {
	for _, q := range m.order {
		b.Queue(`INSERT INTO datatarget_messages (datatarget_id, number, company_id, body, posted_at)
			SELECT $1, n, $2, body, at FROM unnest($3::bigint[], $4::json[], $5::timestamptz[]) AS u(n, body, at)`,
			q.datatargetID, q.companyID, q.numbers, q.bodies, q.postedAt)
		b.Queue(`UPDATE datatargets SET last_message_number = greatest(last_message_number, $3)
			WHERE company_id = $1 AND id = $2`, q.companyID, q.datatargetID, q.last)
	}
}
