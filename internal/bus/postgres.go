package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The outbox uses watermill-sql's default PostgreSQL layout; the tables of
// each topic are created by the migrations.
var (
	schemaAdapter  = wsql.DefaultPostgreSQLSchema{}
	offsetsAdapter = wsql.DefaultPostgreSQLOffsetsAdapter{}
)

// PostgresConfig configures the PostgreSQL transport. Zero fields take the
// defaults documented on each.
type PostgresConfig struct {
	// PollInterval is how long a subscriber waits before looking for new
	// messages after finding none: the delivery latency when idle.
	// Default 100ms.
	PollInterval time.Duration
	// ResendInterval is how long a subscriber waits before redelivering a
	// message its handler nacked. Default 1s.
	ResendInterval time.Duration
	// RetryInterval is how long a subscriber waits after a database error
	// before querying again. Default 1s.
	RetryInterval time.Duration
	// AckDeadline is how long a handler may take to ack a message before it
	// is nacked and redelivered. Default 30s.
	AckDeadline time.Duration
	// BatchSize is how many messages a subscriber reads per query. The
	// subscriber keeps one transaction open while its handler works through
	// the batch, and that transaction holds back pg_snapshot_xmin, which
	// delays every reader of the outbox and of the event log; a small batch
	// keeps the delay short. Default 10.
	BatchSize int
	// Logger receives Watermill's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c *PostgresConfig) setDefaults() {
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.ResendInterval == 0 {
		c.ResendInterval = time.Second
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = time.Second
	}
	if c.AckDeadline == 0 {
		c.AckDeadline = 30 * time.Second
	}
	if c.BatchSize == 0 {
		c.BatchSize = 10
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every invalid field.
func (c PostgresConfig) Validate() error {
	var errs []error
	if c.PollInterval < 0 {
		errs = append(errs, errors.New("bus: PollInterval is negative"))
	}
	if c.ResendInterval < 0 {
		errs = append(errs, errors.New("bus: ResendInterval is negative"))
	}
	if c.RetryInterval < 0 {
		errs = append(errs, errors.New("bus: RetryInterval is negative"))
	}
	if c.AckDeadline < 0 {
		errs = append(errs, errors.New("bus: AckDeadline is negative"))
	}
	if c.BatchSize < 0 {
		errs = append(errs, errors.New("bus: BatchSize is negative"))
	}
	return errors.Join(errs...)
}

// Postgres is the Transport that reads the outbox tables directly.
type Postgres struct {
	pool   *pgxpool.Pool
	cfg    PostgresConfig
	logger watermill.LoggerAdapter
}

var _ Transport = (*Postgres)(nil)

// NewPostgres returns the PostgreSQL transport on pool.
func NewPostgres(pool *pgxpool.Pool, cfg PostgresConfig) (*Postgres, error) {
	if pool == nil {
		return nil, errors.New("bus: nil pool")
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Postgres{pool: pool, cfg: cfg, logger: Logger(cfg.Logger)}, nil
}

// Subscriber returns a subscriber of consumerGroup. Its offset lives in the
// topic's offsets table, so a restarted consumer resumes after the last
// message it acked.
func (p *Postgres) Subscriber(consumerGroup string) (message.Subscriber, error) {
	if consumerGroup == "" {
		return nil, errors.New("bus: empty consumer group")
	}
	ack := p.cfg.AckDeadline
	schema := schemaAdapter
	schema.SubscribeBatchSize = p.cfg.BatchSize
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromPgx(p.pool), wsql.SubscriberConfig{
		ConsumerGroup:    consumerGroup,
		AckDeadline:      &ack,
		PollInterval:     p.cfg.PollInterval,
		ResendInterval:   p.cfg.ResendInterval,
		RetryInterval:    p.cfg.RetryInterval,
		SchemaAdapter:    schema,
		OffsetsAdapter:   offsetsAdapter,
		InitializeSchema: false,
	}, p.logger.With(watermill.LogFields{"consumer_group": consumerGroup}))
	if err != nil {
		return nil, fmt.Errorf("bus: subscriber %q: %w", consumerGroup, err)
	}
	return sub, nil
}

// OutboxPublisher returns a publisher that writes messages as rows in tx:
// they are delivered if and only if tx commits. It is cheap; make one per
// transaction. Publish uses the context of the first message; a nil logger
// discards the publisher's logs.
func OutboxPublisher(tx pgx.Tx, logger watermill.LoggerAdapter) (message.Publisher, error) {
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{
		SchemaAdapter:        schemaAdapter,
		AutoInitializeSchema: false,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("bus: outbox publisher: %w", err)
	}
	return pub, nil
}
