// Package bus is Clientele's message transport: Watermill, over PostgreSQL
// by default (watermill-sql v4, speaking pgx natively).
//
// Publishing always goes through the transactional outbox: a message is a
// row written in the same PostgreSQL transaction as the change it announces
// (see OutboxPublisher and CommitPublisher), so a message exists if and only
// if its change committed. Consuming goes through a Transport. The one
// implemented here, Postgres, reads the outbox table itself. A NATS
// JetStream or Kafka transport would keep the SQL outbox (its publisher
// wrapped in forwarder.NewPublisher) and run Watermill's forwarder
// (components/forwarder) to move the outbox rows to the broker, partitioned
// by the "company_id" metadata so that order holds per tenant; consumers
// would get their subscribers from that transport instead.
package bus

import (
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
// same group (on several nodes) share the work without reordering it.
type Transport interface {
	// Subscriber returns a new subscriber for consumerGroup. The caller
	// closes it (a Watermill router closes the subscribers of its handlers).
	Subscriber(consumerGroup string) (message.Subscriber, error)
}

// Logger adapts logger (slog.Default() when nil) to Watermill.
func Logger(logger *slog.Logger) watermill.LoggerAdapter {
	return watermill.NewSlogLogger(logger)
}
