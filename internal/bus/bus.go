// Package bus is Clientele's message transport: Watermill, over PostgreSQL
// by default (watermill-sql v4, speaking pgx natively), or over NATS
// JetStream (watermill-nats v2).
//
// Publishing always goes through the transactional outbox: a message is a
// row written in the same PostgreSQL transaction as the change it announces
// (see OutboxPublisher and PublishCommit), so a message exists if and only
// if its change committed. Consuming goes through a Transport. Postgres
// reads the outbox tables itself. NATS keeps the same outbox and relays its
// rows to JetStream, one subject per company, each consumer group a durable
// consumer with one message in flight, so that every group sees the log's
// order (see NATS for the design and why it is not Watermill's forwarder
// component). Both keep the contract of Transport, which one suite checks
// (contract_test.go). On either, messages only announce: the event log and
// the import chunks are the source of truth, and consumers catch up from
// them when a message is missing.
package bus

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// CommitsTopic is the topic of event store commits: one message per commit.
// Its outbox tables are watermill_commits and watermill_offsets_commits,
// created by the migrations (never by Watermill at run time).
const CommitsTopic = "commits"

// Transport hands out subscribers. Every consumer group receives every
// message of a topic at least once, in publication order; consumers in the
// same group (on several nodes) share the work without reordering it; a
// message nacked, or left unacked by a subscriber that went away, comes
// again before any later one; a group that subscribes again resumes no
// later than right after the last message it acked.
type Transport interface {
	// Subscriber returns a new subscriber for consumerGroup. The caller
	// closes it (a Watermill router closes the subscribers of its handlers).
	Subscriber(consumerGroup string) (message.Subscriber, error)
}

// Logger adapts logger (slog.Default() when nil) to Watermill. An error
// that is a cancellation is logged at debug level: Watermill reports the
// query a subscription had in flight when it ended ("could not commit tx
// for querying message: ... context canceled") as an error, and every
// clean stop of a node would log one per consumer.
func Logger(logger *slog.Logger) watermill.LoggerAdapter {
	return cancelsAtDebug{watermill.NewSlogLogger(logger)}
}

type cancelsAtDebug struct{ watermill.LoggerAdapter }

func (l cancelsAtDebug) Error(msg string, err error, fields watermill.LogFields) {
	if errors.Is(err, context.Canceled) {
		l.Debug(msg, fields.Add(watermill.LogFields{"error": err.Error()}))
		return
	}
	l.LoggerAdapter.Error(msg, err, fields)
}

func (l cancelsAtDebug) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return cancelsAtDebug{l.LoggerAdapter.With(fields)}
}
