package readmodels

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// MessagePage is a page of a datatarget's queue.
type MessagePage struct {
	// Messages are the messages in order, as JSON objects.
	Messages []json.RawMessage
	// LastMessageNumber is the number of the last message of the page (0
	// when the page is empty): the after of the next page.
	LastMessageNumber int64
}

// Messages returns up to limit messages of a datatarget numbered above
// after, in order. An unknown datatarget is NotFound. The bodies are
// copied into one buffer: a page of 10,000 messages is one allocation, not
// 10,000.
//
// A datatarget's messages are in datatarget_messages (messages), in
// datasync_messages (datasync), in campaign_sync_messages (datasync of
// campaigns, written by the campaign_stats projection) or in
// segment_sync_messages (datasync of a segment, written by the
// segment_members projection), never in two: the query reads the four
// ranges, an index range each, rather than look the type up first.
func (q *Datatargets) Messages(ctx context.Context, companyID, datatargetID string, after int64, limit int) (MessagePage, error) {
	limit = max(1, min(limit, datatarget.MaxRetrieveLimit))
	rows, err := q.db.Query(ctx, `(SELECT number, body FROM datatarget_messages
			WHERE datatarget_id = $1 AND number > $2 AND company_id = $3 ORDER BY number LIMIT $4)
		UNION ALL (SELECT number, body FROM datasync_messages
			WHERE datatarget_id = $1 AND number > $2 AND company_id = $3 ORDER BY number LIMIT $4)
		UNION ALL (SELECT number, body FROM campaign_sync_messages
			WHERE datatarget_id = $1 AND number > $2 AND company_id = $3 ORDER BY number LIMIT $4)
		UNION ALL (SELECT number, body FROM segment_sync_messages
			WHERE datatarget_id = $1 AND number > $2 AND company_id = $3 ORDER BY number LIMIT $4)
		ORDER BY number LIMIT $4`,
		datatargetID, after, companyID, limit)
	if err != nil {
		return MessagePage{}, fmt.Errorf("readmodels: messages: %w", err)
	}
	defer rows.Close()
	var (
		page   MessagePage
		buf    []byte
		bounds []int
		number int64
	)
	for rows.Next() {
		raw := rows.RawValues()
		if err := rows.Scan(&number, nil); err != nil {
			return MessagePage{}, fmt.Errorf("readmodels: messages: %w", err)
		}
		buf = append(buf, raw[1]...)
		bounds = append(bounds, len(buf))
		page.LastMessageNumber = number
	}
	if err := rows.Err(); err != nil {
		return MessagePage{}, fmt.Errorf("readmodels: messages: %w", err)
	}
	page.Messages = make([]json.RawMessage, len(bounds))
	start := 0
	for i, end := range bounds {
		page.Messages[i] = buf[start:end:end]
		start = end
	}
	if first := page.LastMessageNumber - int64(len(page.Messages)) + 1; len(page.Messages) > 0 && first > after+1 {
		// Numbers are consecutive: a gap before the first is messages
		// pruned after the datatarget's retention (delivery.Retention).
		return MessagePage{}, errPruned(after, first)
	}
	if len(page.Messages) == 0 {
		// Nothing follows; say 404 if there is no such datatarget at all.
		if _, err := q.exists(ctx, companyID, datatargetID); err != nil {
			return MessagePage{}, err
		}
	}
	return page, nil
}

// exists returns the datatarget's last message number, or NotFound.
func (q *Datatargets) exists(ctx context.Context, companyID, id string) (int64, error) {
	var last int64
	err := q.db.QueryRow(ctx, `SELECT last_message_number FROM datatargets WHERE company_id = $1 AND id = $2`, companyID, id).Scan(&last)
	if err != nil {
		return 0, notFoundOr(err, errNoDatatarget(), "datatarget")
	}
	return last, nil
}

// PrunedError is the answer of Messages when the messages after the
// after asked for were pruned after the datatarget's retention
// (delivery.Retention): a domain Gone error that also says where the
// kept messages start.
type PrunedError struct {
	// First is the number of the first message kept.
	First int64
	err   *domain.Error
}

func (e *PrunedError) Error() string { return e.err.Error() }

// Unwrap returns the domain error, which the API answers (410).
func (e *PrunedError) Unwrap() error { return e.err }

// errPruned says that the messages after after, up to first, are no
// longer kept.
func errPruned(after, first int64) error {
	return &PrunedError{First: first, err: prunedMessage(after, first)}
}

func prunedMessage(after, first int64) *domain.Error {
	if first == after+2 {
		return domain.Errorf(domain.Gone, "message %d is no longer kept (messages are pruned after the datatarget's retention once every outlet delivered them); the first message kept is %d: retrieve with after=%d",
			after+1, first, first-1)
	}
	return domain.Errorf(domain.Gone, "messages %d to %d are no longer kept (messages are pruned after the datatarget's retention once every outlet delivered them); the first message kept is %d: retrieve with after=%d",
		after+1, first-1, first, first-1)
}
