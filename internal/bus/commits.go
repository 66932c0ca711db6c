package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
)

// CommitHeader is the payload of a message on CommitsTopic. It announces a
// commit without carrying its events: a consumer reads them from the event
// store (eventstore.CommitReader.ReadCommit), so the data is never copied,
// and a commit of a thousand events is one small message. Its fields are
// plain values: the header is made from a commit, and read back as log
// positions, where the event store is known (projections.HeaderOf).
type CommitHeader struct {
	// TxID identifies the commit (eventstore.Committed.TxID).
	TxID uint64 `json:"tx_id"`
	// CompanyID is the tenant of the commit; brokers partition by it.
	CompanyID string `json:"company_id"`
	// First and Last are the global positions of the commit's first and
	// last event.
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// Count is the number of events in the commit.
	Count int `json:"count"`
	// Types are the distinct event types of the commit, sorted, so that a
	// consumer that uses a few types can skip a commit of none of them
	// without reading it. Absent from messages written before it existed
	// (nil: unknown, read the commit).
	Types []string `json:"types,omitempty"`
}

// HasAnyType reports whether the commit may hold an event of one of
// types: false only when the header lists its types and none is among
// them.
func (h CommitHeader) HasAnyType(types []string) bool {
	if h.Types == nil {
		return true
	}
	for _, t := range types {
		if _, found := slices.BinarySearch(h.Types, t); found {
			return true
		}
	}
	return false
}

// ParseCommitHeader decodes and checks the payload of a commit message.
func ParseCommitHeader(payload []byte) (CommitHeader, error) {
	var h CommitHeader
	if err := json.Unmarshal(payload, &h); err != nil {
		return CommitHeader{}, fmt.Errorf("bus: commit header: %w", err)
	}
	if h.TxID == 0 || h.Count <= 0 || h.First > h.Last {
		return CommitHeader{}, fmt.Errorf("bus: commit header %s: %w", payload, errInvalidHeader)
	}
	return h, nil
}

var errInvalidHeader = errors.New("invalid")

// NewCommitMessage returns the message announcing the commit h.
func NewCommitMessage(ctx context.Context, h CommitHeader) (*message.Message, error) {
	payload, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	msg := message.NewMessage(watermill.NewUUID(), payload)
	msg.Metadata.Set("company_id", h.CompanyID)
	msg.Metadata.Set("tx_id", strconv.FormatUint(h.TxID, 10))
	msg.SetContext(ctx)
	return msg, nil
}

// PublishCommit writes the message announcing the commit h on
// CommitsTopic in tx, the commit's own transaction (the outbox): the
// message exists exactly when the commit does. logger receives the
// publisher's trace logs; nil discards them. The event store's hook that
// calls it for every commit is projections.CommitPublisher.
func PublishCommit(ctx context.Context, tx pgx.Tx, h CommitHeader, logger *slog.Logger) error {
	var wlog watermill.LoggerAdapter = watermill.NopLogger{}
	if logger != nil {
		wlog = Logger(logger)
	}
	pub, err := OutboxPublisher(tx, wlog)
	if err != nil {
		return err
	}
	msg, err := NewCommitMessage(ctx, h)
	if err != nil {
		return err
	}
	if err := pub.Publish(CommitsTopic, msg); err != nil {
		return fmt.Errorf("bus: publish commit %d: %w", h.TxID, err)
	}
	return nil
}
