package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/wake"
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
	// messages after finding none: the delivery latency when idle, for
	// messages written by another process. Default 100ms.
	PollInterval time.Duration
	// Wake, when set, fires after each commit of this process that may
	// have written messages (postgres.Store.Commits): a subscriber that
	// found nothing waits for it or for PollInterval, whichever comes
	// first, and after it looks again soon a few times (see pollBackoff).
	Wake *wake.Signal
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
//
// The subscriber lives through database outages. Its Subscribe waits for
// the database (waitingSubscriber), and once subscribed it polls again
// every RetryInterval after a failed query (backoff) until the database
// answers: no outage ends the Watermill router that runs it, and so
// neither the consumer nor serve.
func (p *Postgres) Subscriber(consumerGroup string) (message.Subscriber, error) {
	if consumerGroup == "" {
		return nil, errors.New("bus: empty consumer group")
	}
	ack := p.cfg.AckDeadline
	schema := schemaAdapter
	schema.SubscribeBatchSize = p.cfg.BatchSize
	backoff := newPollBackoff(p.cfg, consumerGroup)
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromPgx(p.pool), wsql.SubscriberConfig{
		ConsumerGroup:    consumerGroup,
		AckDeadline:      &ack,
		PollInterval:     p.cfg.PollInterval,
		ResendInterval:   p.cfg.ResendInterval,
		RetryInterval:    p.cfg.RetryInterval,
		BackoffManager:   backoff,
		SchemaAdapter:    schema,
		OffsetsAdapter:   offsetsAdapter,
		InitializeSchema: false,
	}, p.logger.With(watermill.LogFields{"consumer_group": consumerGroup}))
	if err != nil {
		return nil, fmt.Errorf("bus: subscriber %q: %w", consumerGroup, err)
	}
	return waitingSubscriber{Subscriber: sub, backoff: backoff, retry: p.cfg.RetryInterval, logger: p.cfg.Logger.With("consumer_group", consumerGroup)}, nil
}

// waitingSubscriber is a watermill-sql subscriber whose Subscribe waits
// for the database. watermill-sql runs a statement when it subscribes (it
// makes sure the group's offset row exists), and a Watermill router whose
// handler fails to subscribe stops for good: started while the database
// restarts, a consumer would never consume. Watermill's routers run
// once and do not clean up after such a failure (Close then waits out its
// timeout for the handler that never started), so the wait belongs
// here rather than in a loop that builds new routers.
type waitingSubscriber struct {
	message.Subscriber
	backoff *pollBackoff
	retry   time.Duration
	logger  *slog.Logger
}

// Close ends the subscriber's wait for messages (pollBackoff) before
// closing it, so that closing does not wait out a PollInterval.
func (s waitingSubscriber) Close() error {
	s.backoff.close()
	return s.Subscriber.Close()
}

// Subscribe subscribes to topic, retrying every RetryInterval while the
// database is unavailable (pg.Transient), until ctx ends.
func (s waitingSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	var outage pg.Outage
	for {
		msgs, err := s.Subscriber.Subscribe(ctx, topic)
		switch {
		case err == nil:
			if outage.Succeeded() {
				s.logger.Info("bus: subscribed once the database answered", "topic", topic)
			}
			// The subscription ends with ctx: so does its wait for messages.
			context.AfterFunc(ctx, s.backoff.close)
			return msgs, nil
		case ctx.Err() != nil || !pg.Transient(err):
			return nil, err
		case outage.Failed(err):
			s.logger.Warn("bus: cannot subscribe: the database is unavailable; retrying until it is back",
				"topic", topic, "retry_every", s.retry.String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.retry):
		}
	}
}

// pollBackoff is the subscribers' wsql.BackoffManager. Like watermill-sql's
// default, it polls again at once after a batch, after PollInterval when
// there was nothing, at once after a lost serialization race, and after
// RetryInterval after any other error. Unlike it, it logs a run of
// failures for want of the database (pg.Transient) twice, a warning when
// it starts and a line when the subscriber reads again, instead of an
// error at every retry: every consumer group polls, so an outage of an
// hour would otherwise log thousands of identical errors.
//
// With a Wake signal, a subscriber that found nothing waits in
// HandleError (watermill-sql queries again when it returns) for the
// signal or PollInterval. A woken subscriber may still find nothing: a
// message is read only once every older transaction on the server has
// ended (pg_snapshot_xmin), and one may still be running. So after a wake
// it looks again after soonAfterWake, then twice as long each time, up to
// PollInterval: the commit that woke it is read within milliseconds of
// becoming readable, and an idle process queries once a PollInterval.
type pollBackoff struct {
	poll, retry time.Duration
	logger      *slog.Logger
	outage      pg.Outage

	wake    *wake.Signal
	closing chan struct{}
	once    sync.Once
	mu      sync.Mutex      // guards woken and soon; each subscriber here has one subscription, whose end closes closing
	woken   <-chan struct{} // taken before the query whose answer HandleError gets
	soon    time.Duration   // the next wait after a wake; 0 when idle
}

// soonAfterWake is the first wait after a wake that found nothing.
const soonAfterWake = 5 * time.Millisecond

func newPollBackoff(cfg PostgresConfig, consumerGroup string) *pollBackoff {
	return &pollBackoff{poll: cfg.PollInterval, retry: cfg.RetryInterval, logger: cfg.Logger.With("consumer_group", consumerGroup),
		wake: cfg.Wake, woken: cfg.Wake.C(), closing: make(chan struct{})}
}

var _ wsql.BackoffManager = (*pollBackoff)(nil)

func (b *pollBackoff) close() { b.once.Do(func() { close(b.closing) }) }

// HandleError implements wsql.BackoffManager.
func (b *pollBackoff) HandleError(_ watermill.LoggerAdapter, noMsg bool, err error) time.Duration {
	if err == nil {
		if b.outage.Succeeded() {
			b.logger.Info("bus: the subscriber reads messages again")
		}
		if !noMsg {
			b.mu.Lock()
			b.soon, b.woken = 0, b.wake.C()
			b.mu.Unlock()
			return 0
		}
		if b.wake == nil {
			return b.poll
		}
		b.waitForMessages()
		return 0
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") {
		return 0 // another subscriber of the group won the row; try again
	}
	if errors.Is(err, context.Canceled) {
		// The subscription is ending (its context, or Close, ended the
		// query): no outage to report, and the loop stops at its next turn.
		return b.poll
	}
	if b.outage.Failed(err) {
		if pg.Transient(err) {
			b.logger.Warn("bus: the subscriber cannot read messages: the database is unavailable; it retries until it is back",
				"retry_every", b.retry.String(), "err", err)
		} else {
			b.logger.Error("bus: the subscriber cannot read messages; it retries", "retry_every", b.retry.String(), "err", err)
		}
	}
	return b.retry
}

// waitForMessages waits, after a query that found nothing, for the next
// wake or the poll (see pollBackoff), and takes the channel of the wake
// after that before the next query.
func (b *pollBackoff) waitForMessages() {
	b.mu.Lock()
	wait, woken := b.poll, b.woken
	if b.soon > 0 && b.soon < b.poll {
		wait, b.soon = b.soon, 2*b.soon
	}
	b.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var soon bool
	select {
	case <-woken:
		soon = true
	case <-t.C:
	case <-b.closing:
	}
	b.mu.Lock()
	if soon {
		b.soon = soonAfterWake
	}
	b.woken = b.wake.C()
	b.mu.Unlock()
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
