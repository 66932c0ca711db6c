package bus

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/clientele/clientele/internal/pg"
)

// RelayGroup is the consumer group, in the outbox tables, of the relay
// that forwards the outbox to NATS (see NATS). It is a durable
// identifier: renaming it would forward every message still in the
// outbox again (harmlessly, consumers skip what they have done).
const RelayGroup = "nats_relay"

// NATSConfig configures the NATS JetStream transport. Zero fields take
// the defaults documented on each.
type NATSConfig struct {
	// URL is the server's address, nats://HOST:PORT, or several
	// comma-separated (a cluster). Required. Its query may set ack_wait
	// (a Go duration), which overrides AckWait, and replicas (1 to 5),
	// which overrides Replicas.
	URL string
	// AckWait is how long JetStream waits for a consumer to ack a message
	// before it redelivers it, to another node when one holds the group.
	// It bounds the pause of a consumer group after a node dies holding a
	// message (at most one message of a group is in flight, see NATS), and
	// must exceed the longest a handler takes: a handler still at work
	// when it passes sees its message redelivered alongside (harmless,
	// handlers are idempotent, but wasted work). Default 30s.
	AckWait time.Duration
	// MaxAge is how long a stream keeps a message: a consumer group that
	// is away for longer finds its oldest messages gone, and catches up
	// from the event log, as the consumers do whenever a message is
	// missing. Default 24h.
	MaxAge time.Duration
	// Replicas is the number of copies JetStream keeps of each stream, on
	// a cluster of at least as many servers: with 3, a stream outlives
	// the loss of one server. 1 to 5; default 1. It applies when a
	// stream is made: a stream made before keeps its replicas.
	Replicas int
	// RetryInterval is how long a subscriber waits before subscribing
	// again when NATS cannot be reached, and how long the relay waits
	// before it starts again after an error. Default 1s.
	RetryInterval time.Duration
	// PruneInterval is how often the relay deletes from the outbox the
	// messages it forwarded, and makes again the stream and this
	// process's consumers when NATS lost them (heal). Default 1m.
	PruneInterval time.Duration
	// Relay configures the relay's reading of the outbox tables.
	// BatchSize defaults to 100 here: the relay's handler only publishes,
	// so the subscriber's transaction stays short.
	Relay PostgresConfig
	// Logger receives the transport's and Watermill's logs. Default
	// slog.Default().
	Logger *slog.Logger
}

func (c *NATSConfig) setDefaults() error {
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxAge == 0 {
		c.MaxAge = 24 * time.Hour
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = time.Second
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Relay.BatchSize == 0 {
		c.Relay.BatchSize = 100
	}
	if c.Relay.Logger == nil {
		c.Relay.Logger = c.Logger
	}
	p, err := ParseNATSURL(c.URL)
	if err != nil {
		return err
	}
	c.URL = p.Servers
	if p.AckWait > 0 {
		c.AckWait = p.AckWait
	}
	if p.Replicas > 0 {
		c.Replicas = p.Replicas
	}
	return nil
}

// Validate reports every invalid field.
func (c NATSConfig) Validate() error {
	var errs []error
	if _, err := ParseNATSURL(c.URL); err != nil {
		errs = append(errs, err)
	}
	if c.AckWait < 0 || c.MaxAge < 0 || c.RetryInterval < 0 || c.PruneInterval < 0 {
		errs = append(errs, errors.New("bus: AckWait, MaxAge, RetryInterval or PruneInterval is negative"))
	}
	if c.Replicas < 0 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("bus: Replicas is %d, not from 1 to %d (0 for the default)", c.Replicas, maxReplicas))
	}
	errs = append(errs, c.Relay.Validate())
	return errors.Join(errs...)
}

// NATSURL is a --bus URL taken apart by ParseNATSURL.
type NATSURL struct {
	// Servers are the server URLs, comma-separated, without the query.
	Servers string
	// AckWait is the ack_wait parameter, 0 when not given.
	AckWait time.Duration
	// Replicas is the replicas parameter, 0 when not given.
	Replicas int
}

// maxReplicas is the most replicas JetStream keeps of a stream.
const maxReplicas = 5

// ParseNATSURL checks a --bus URL, nats://HOST:PORT[,nats://HOST:PORT...]
// with an optional query of ack_wait=DURATION and replicas=1..5, and
// returns its parts.
func ParseNATSURL(raw string) (NATSURL, error) {
	if raw == "" {
		return NATSURL{}, errors.New("bus: no NATS URL")
	}
	var p NATSURL
	var out []string
	for _, s := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return NATSURL{}, fmt.Errorf("bus: NATS URL %q: %w", s, err)
		}
		if u.Scheme != "nats" && u.Scheme != "tls" || u.Host == "" || u.Path != "" {
			return NATSURL{}, fmt.Errorf("bus: NATS URL %q: want nats://HOST:PORT", s)
		}
		for k, v := range u.Query() {
			switch k {
			case "ack_wait":
				if p.AckWait, err = time.ParseDuration(v[0]); err != nil || p.AckWait <= 0 {
					return NATSURL{}, fmt.Errorf("bus: NATS URL %q: ack_wait %q: want a positive duration such as 30s", s, v[0])
				}
			case "replicas":
				if p.Replicas, err = strconv.Atoi(v[0]); err != nil || p.Replicas < 1 || p.Replicas > maxReplicas {
					return NATSURL{}, fmt.Errorf("bus: NATS URL %q: replicas %q: want a number from 1 to %d, at most the servers of the cluster", s, v[0], maxReplicas)
				}
			default:
				return NATSURL{}, fmt.Errorf("bus: NATS URL %q: unknown parameter %q (known: ack_wait, replicas)", s, k)
			}
		}
		u.RawQuery = ""
		out = append(out, u.String())
	}
	p.Servers = strings.Join(out, ",")
	return p, nil
}

// NATS is the Transport over NATS JetStream.
//
// Publishing still goes through the SQL outbox alone, in the transaction
// of the change (PublishCommit, ingest's scheduling), so a message
// exists exactly when its change does, whatever the broker's state. A
// relay moves the outbox rows of each topic to JetStream: a Watermill
// router handler that reads the outbox as the consumer group RelayGroup
// (the PostgreSQL transport's subscriber, one reader at a time across
// nodes, in log order) and publishes each message, synchronously, with
// its UUID as the JetStream message id (duplicates of a relay that
// crashed before its outbox ack are dropped by the stream's duplicate
// window). Every process that subscribes runs it; the group's offset
// lock makes one node relay at a time. Watermill's forwarder component
// would do the same, but only for messages written in its envelope to a
// topic of its own: the outbox would differ with the transport, and the
// PostgreSQL transport could no longer read it. Here the outbox is the
// same for both, so a deployment changes transport with a restart.
//
// Each topic is a stream of the same name whose subjects are
// TOPIC.COMPANY: one subject per company (natsSubject). A consumer group
// is a durable push consumer of the stream named after the group (the
// projector, the import worker), its nodes a queue (deliver) group, with
// MaxAckPending 1: at most one message of the group is in flight, across
// every node and redelivery, so the group sees the stream in its order,
// which is the outbox's, which is the log's. That is the order a
// projector needs (its checkpoint is one position in the whole log, not
// one per company) and the order the import worker applies chunks in,
// the same guarantee as the PostgreSQL transport's offset lock. Partitions
// of companies with a consumer each would let different companies go in
// parallel, but a projector's single checkpoint would serialise them
// anyway. The subjects per company keep each company's messages apart in
// the stream (for inspection, and for consumers that may one day filter
// by company), and one company's messages are always in order.
//
// A message that is lost (expired, or dropped by a stream that was
// recreated) or duplicated skips or doubles nothing: messages only
// announce commits and chunks, the consumers check each against the
// event log and their checkpoints, and catch up from the log when they
// find a gap.
type NATS struct {
	cfg    NATSConfig
	pg     *Postgres
	pool   *pgxpool.Pool
	logger watermill.LoggerAdapter

	mu      sync.Mutex
	conn    *nats.Conn
	relays  map[string]bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
	streams map[string]bool
	// groups are the consumer groups subscribed in this process, by
	// topic: heal recreates their consumers when NATS lost them.
	groups map[string]map[string]bool
	// unverified are the topics whose stream this process found
	// missing and has not yet read a message back from (see
	// checkRelayed).
	unverified map[string]bool
	// making serialises the making and deleting of streams in this
	// process: a stream made while NATS still deletes one of the same
	// name is broken (see remakeStream).
	making sync.Mutex
}

var _ Transport = (*NATS)(nil)

var errNATSClosed = errors.New("bus: the NATS transport is closed")

// NewNATS returns the JetStream transport; pool is the database of the
// outbox. It connects on first use, not here.
func NewNATS(pool *pgxpool.Pool, cfg NATSConfig) (*NATS, error) {
	if pool == nil {
		return nil, errors.New("bus: nil pool")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := NewPostgres(pool, cfg.Relay)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &NATS{cfg: cfg, pg: p, pool: pool, logger: Logger(cfg.Logger), relays: map[string]bool{},
		streams: map[string]bool{}, groups: map[string]map[string]bool{}, unverified: map[string]bool{},
		ctx: ctx, cancel: cancel}, nil
}

// AckWait is the transport's ack wait (NATSConfig.AckWait).
func (n *NATS) AckWait() time.Duration { return n.cfg.AckWait }

// options are the connection options of every connection: reconnect for
// ever, since a consumer must outlive an outage of NATS.
func (n *NATS) options(name string) []nats.Option {
	log := n.cfg.Logger
	return []nats.Option{
		nats.Name("clientele " + name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(n.cfg.RetryInterval),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("bus: disconnected from NATS; reconnecting", "connection", name, "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("bus: reconnected to NATS", "connection", name, "server", c.ConnectedUrlRedacted())
		}),
	}
}

// jetStream returns the transport's own connection's JetStream context,
// connecting first.
func (n *NATS) jetStream() (nats.JetStreamContext, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errNATSClosed
	}
	if n.conn == nil {
		c, err := nats.Connect(n.cfg.URL, n.options("transport")...)
		if err != nil {
			return nil, fmt.Errorf("bus: connect to NATS: %w", err)
		}
		n.conn = c
	}
	return n.conn.JetStream()
}

// EnsureStream creates the stream of topic when it does not exist. An
// existing stream is left as it is: an operator may have tuned it.
func (n *NATS) EnsureStream(topic string) error {
	n.mu.Lock()
	done := n.streams[topic]
	n.mu.Unlock()
	if done {
		return nil
	}
	n.making.Lock()
	defer n.making.Unlock()
	return n.ensureStream(topic)
}

// ensureStream is EnsureStream, n.making held.
func (n *NATS) ensureStream(topic string) error {
	js, err := n.jetStream()
	if err != nil {
		return err
	}
	_, err = js.StreamInfo(topic)
	if errors.Is(err, nats.ErrStreamNotFound) {
		n.mu.Lock()
		n.unverified[topic] = true
		n.mu.Unlock()
		_, err = js.AddStream(&nats.StreamConfig{
			Name:        topic,
			Description: "Clientele outbox topic " + topic + ", one subject per company",
			Subjects:    []string{topic + ".>"},
			Retention:   nats.LimitsPolicy,
			Storage:     nats.FileStorage,
			MaxAge:      n.cfg.MaxAge,
			Replicas:    n.cfg.Replicas,
			Duplicates:  2 * time.Minute,
		})
		if errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
			err = nil // another node created it
		}
	}
	if err != nil {
		return fmt.Errorf("bus: stream %s: %w", topic, err)
	}
	n.mu.Lock()
	n.streams[topic] = true
	n.mu.Unlock()
	return nil
}

// ensureConsumer creates or updates the durable consumer of group on
// topic's stream: the transport, not the client library, owns its
// configuration, so that a changed AckWait applies on restart instead of
// failing the subscription.
func (n *NATS) ensureConsumer(topic, group string) error {
	js, err := n.jetStream()
	if err != nil {
		return err
	}
	cfg := &nats.ConsumerConfig{
		Durable:        group,
		Description:    "Clientele consumer group " + group,
		DeliverSubject: "clientele-deliver." + topic + "." + group,
		DeliverGroup:   group,
		DeliverPolicy:  nats.DeliverAllPolicy,
		AckPolicy:      nats.AckExplicitPolicy,
		AckWait:        n.cfg.AckWait,
		MaxAckPending:  1,
		FilterSubject:  topic + ".>",
	}
	info, err := js.ConsumerInfo(topic, group)
	switch {
	case errors.Is(err, nats.ErrConsumerNotFound):
		_, err = js.AddConsumer(topic, cfg)
	case err == nil && (info.Config.AckWait != cfg.AckWait || info.Config.MaxAckPending != 1):
		cfg.DeliverSubject = info.Config.DeliverSubject
		_, err = js.UpdateConsumer(topic, cfg)
	}
	if err != nil {
		return fmt.Errorf("bus: consumer %s of %s: %w", group, topic, err)
	}
	n.mu.Lock()
	if n.groups[topic] == nil {
		n.groups[topic] = map[string]bool{}
	}
	n.groups[topic][group] = true
	n.mu.Unlock()
	return nil
}

// heal makes sure the stream of topic and the consumers of the groups
// subscribed to it in this process exist, creating again those that NATS
// lost: a server that came back with an empty store, or an operator who
// deleted or recreated a stream or a consumer. The subscriptions stay as
// they are: a consumer made again delivers to the same subject, so they
// receive its messages. Without it the relay would publish to a stream
// that is gone, and the groups receive nothing, until the processes
// restart (the consumers would still catch up from the log, but only
// after StallAfter each time). It also deletes and makes again a stream
// that lost its store (see remakeStream): when remake is not empty, it
// says why the relay found it so; else heal looks for itself.
func (n *NATS) heal(topic, remake string) error {
	n.mu.Lock()
	if n.conn != nil && !n.conn.IsConnected() {
		n.mu.Unlock()
		return nil // an outage: NATS lost nothing we can tell yet
	}
	delete(n.streams, topic)
	groups := make([]string, 0, len(n.groups[topic]))
	for g := range n.groups[topic] {
		groups = append(groups, g)
	}
	n.mu.Unlock()
	n.making.Lock()
	var err error
	if remake != "" {
		err = n.remakeStream(topic, remake)
	} else if err = n.ensureStream(topic); err == nil {
		err = n.checkStream(topic)
	}
	n.making.Unlock()
	errs := []error{err}
	for _, g := range groups {
		errs = append(errs, n.ensureConsumer(topic, g))
	}
	return errors.Join(errs...)
}

// checkStream remakes the stream of topic when NATS cannot read its
// first message (see remakeStream). n.making is held.
func (n *NATS) checkStream(topic string) error {
	js, err := n.jetStream()
	if err != nil {
		return err
	}
	first := func() (uint64, error) {
		info, err := js.StreamInfo(topic)
		if err != nil || info.State.Msgs == 0 {
			return 0, err
		}
		return info.State.FirstSeq, nil
	}
	seq, err := first()
	if err != nil || seq == 0 {
		return err
	}
	if _, err := js.GetMsg(topic, seq); !errors.Is(err, nats.ErrMsgNotFound) {
		return err
	}
	// Gone meanwhile (expired, deleted), or lost?
	if again, err := first(); err != nil || again != seq {
		return err
	}
	return n.remakeStream(topic, fmt.Sprintf("it cannot read its first message, %d", seq))
}

// remakeStream deletes the stream of topic and makes it again, empty.
// n.making is held.
//
// A stream that NATS (2.9) made while it still deleted one of the same
// name (it answers "not found" as soon as a deletion begins, and removes
// the files after) is broken for good: the deletion removes the new
// stream's files too, and the stream then acks messages it cannot
// deliver, or fails to store them, while it and its consumers look
// fine. A heal that finds the stream missing while an operator deletes
// it makes it in that window. The stream that this process deletes
// itself is gone when DeleteStream returns, so the one made after is
// sound. The messages of the broken one are lost, as with any stream
// NATS lost: the consumers catch up from the log.
func (n *NATS) remakeStream(topic, why string) error {
	n.cfg.Logger.Warn("bus: the stream on NATS lost its store; making it again", "stream", topic, "why", why)
	js, err := n.jetStream()
	if err != nil {
		return err
	}
	if err := js.DeleteStream(topic); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
		return fmt.Errorf("bus: delete the broken stream %s: %w", topic, err)
	}
	n.mu.Lock()
	delete(n.streams, topic)
	n.mu.Unlock()
	return n.ensureStream(topic)
}

// jsErrStreamStoreFailed is JetStream's error code for a message that
// a stream could not store.
const jsErrStreamStoreFailed nats.ErrorCode = 10077

// checkRelayed reads back the message the relay just published to
// topic (ack), the first time since this process found the stream
// missing: a stream made again then may be broken (see remakeStream),
// and one that lost a message it acked is made again, so that the
// relay's retry publishes the message to a stream that keeps it.
// Streams that break after that check are found by heal's own, later,
// and their messages lost.
func (n *NATS) checkRelayed(js nats.JetStreamContext, topic string, ack *nats.PubAck) error {
	n.mu.Lock()
	check := n.unverified[topic]
	n.mu.Unlock()
	if !check {
		return nil
	}
	_, err := js.GetMsg(topic, ack.Sequence)
	if errors.Is(err, nats.ErrMsgNotFound) {
		err = fmt.Errorf("bus: stream %s lost message %d as soon as it acked it", topic, ack.Sequence)
		return errors.Join(err, n.heal(topic, err.Error()))
	}
	if err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.unverified, topic)
	n.mu.Unlock()
	return nil
}

// durableName matches the names JetStream accepts for a stream or a
// durable consumer that are also plain to read.
var durableName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Subscriber returns a subscriber of consumerGroup. Subscribing to a
// topic creates the topic's stream and the group's consumer when they do
// not exist, and starts the topic's relay in this process.
func (n *NATS) Subscriber(consumerGroup string) (message.Subscriber, error) {
	if !durableName.MatchString(consumerGroup) {
		return nil, fmt.Errorf("bus: consumer group %q: want letters, digits, _ and - only", consumerGroup)
	}
	return &natsSubscriber{n: n, group: consumerGroup, log: n.cfg.Logger.With("consumer_group", consumerGroup),
		stop: make(chan struct{})}, nil
}

// natsSubscriber subscribes a consumer group, one connection per topic.
// It subscribes with nats.go itself, not watermill-nats: the latter's
// Close unsubscribes, and nats.go then drops, without nacking them,
// the messages NATS pushed that the subscription has not handled yet
// (buffered in the client, or still on the wire). With one message of
// the group in flight, the group's other nodes would wait AckWait for
// it at every clean stop of a node. Here the subscription is drained,
// so that each such message comes to deliver, which nacks it.
type natsSubscriber struct {
	n     *NATS
	group string
	log   *slog.Logger

	mu sync.Mutex
	// stop, closed by Close, ends the subscriptions.
	stop chan struct{}
	// subs are the subscriptions running, until their connection
	// closed.
	subs sync.WaitGroup
}

// handOn nacks m, asking JetStream for it again after a second, by when
// the subscription that got it has ended: at once, it could come back
// to it.
func handOn(m *nats.Msg) { _ = m.Respond([]byte(`-NAK {"delay": 1000000000}`)) }

// Subscribe subscribes to topic, waiting for NATS while it cannot be
// reached, until ctx ends: as with the PostgreSQL transport, an outage
// at start must not stop the Watermill router for good.
func (s *natsSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if !durableName.MatchString(topic) {
		return nil, fmt.Errorf("bus: topic %q: want letters, digits, _ and - only", topic)
	}
	var outage bool
	for {
		msgs, err := s.subscribe(ctx, topic)
		if err == nil {
			if outage {
				s.log.Info("bus: subscribed once NATS answered", "topic", topic)
			}
			s.n.startRelay(topic)
			return msgs, nil
		}
		if ctx.Err() != nil || errors.Is(err, errNATSClosed) {
			return nil, err
		}
		if !outage {
			outage = true
			s.log.Warn("bus: cannot subscribe to NATS; retrying until it answers", "topic", topic,
				"retry_every", s.n.cfg.RetryInterval.String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.n.cfg.RetryInterval):
		}
	}
}

func (s *natsSubscriber) subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := s.n.EnsureStream(topic); err != nil {
		return nil, err
	}
	if err := s.n.ensureConsumer(topic, s.group); err != nil {
		return nil, err
	}
	group := s.group
	closed := make(chan struct{})
	conn, err := nats.Connect(s.n.cfg.URL, append(s.n.options(group+" "+topic),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		return nil, fmt.Errorf("bus: subscriber %q: connect to NATS: %w", group, err)
	}
	js, err := conn.JetStream()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bus: subscriber %q: %w", group, err)
	}
	out := make(chan *message.Message)
	// Bound to the consumer ensureConsumer made; acked by the consumer
	// only (ManualAck).
	_, err = js.QueueSubscribe(topic+".>", group, func(m *nats.Msg) { s.deliver(ctx, m, out) },
		nats.Bind(topic, group), nats.ManualAck())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bus: subscriber %q: subscribe to %s: %w", group, topic, err)
	}
	s.mu.Lock()
	if s.stopped() {
		s.mu.Unlock()
		conn.Close()
		return nil, errNATSClosed
	}
	s.subs.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.subs.Done()
		select {
		case <-ctx.Done():
		case <-s.stop:
		}
		// Drained, not unsubscribed (see natsSubscriber); the drain
		// ends with the connection's close, once it has sent the nacks.
		if err := conn.Drain(); err != nil {
			conn.Close()
		}
		<-closed
		close(out)
	}()
	return out, nil
}

// deliver hands m to out and acks or nacks it as the consumer says, or
// nacks it at once when the subscription ended (Close, or its ctx)
// before the consumer took it.
func (s *natsSubscriber) deliver(ctx context.Context, m *nats.Msg, out chan<- *message.Message) {
	msg, err := (&wnats.NATSMarshaler{}).Unmarshal(m)
	if err != nil {
		s.log.Error("bus: cannot read a message from NATS", "subject", m.Subject, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msg.SetContext(ctx)
	if s.stopped() || ctx.Err() != nil {
		handOn(m)
		return
	}
	select {
	case out <- msg:
	case <-s.stop:
		handOn(m)
		return
	case <-ctx.Done():
		handOn(m)
		return
	}
	// JetStream redelivers the message after AckWait: an ack or a nack
	// that comes later is of no use.
	timeout := time.NewTimer(s.n.cfg.AckWait)
	defer timeout.Stop()
	select {
	case <-msg.Acked():
		if err := m.AckSync(); err != nil {
			s.log.Warn("bus: cannot ack a message on NATS", "message_uuid", msg.UUID, "err", err)
		}
	case <-msg.Nacked():
		if err := m.Nak(); err != nil {
			s.log.Warn("bus: cannot nack a message on NATS", "message_uuid", msg.UUID, "err", err)
		}
	case <-timeout.C:
	case <-s.stop:
	case <-ctx.Done():
	}
}

func (s *natsSubscriber) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// Close closes the subscriptions, nacking the messages NATS pushed that
// the consumer did not take, and returns once they ended.
func (s *natsSubscriber) Close() error {
	s.mu.Lock()
	if !s.stopped() {
		close(s.stop)
	}
	s.mu.Unlock()
	s.subs.Wait()
	return nil
}

// natsSubject is the subject of a message of topic about company:
// TOPIC.COMPANY, the company's id as it is when it is a plain token (a
// UUID is), else hex-encoded behind "x-"; "_" when there is none.
func natsSubject(topic, company string) string {
	switch {
	case company == "":
		return topic + "._"
	case durableName.MatchString(company) && !strings.HasPrefix(company, "x-"):
		return topic + "." + company
	default:
		return topic + ".x-" + hex.EncodeToString([]byte(company))
	}
}

// startRelay starts the relay of topic in this process, once.
func (n *NATS) startRelay(topic string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.relays[topic] {
		return
	}
	n.relays[topic] = true
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.relay(n.ctx, topic)
	}()
}

// relay forwards the outbox rows of topic to its stream until ctx ends,
// starting again after RetryInterval when it stops on an error, and
// prunes what it forwarded and heals the topic every PruneInterval.
func (n *NATS) relay(ctx context.Context, topic string) {
	log := n.cfg.Logger.With("relay", topic)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(n.cfg.PruneInterval):
			}
			if k, err := Prune(ctx, n.pool, topic, []string{RelayGroup}); err != nil && ctx.Err() == nil {
				log.Log(ctx, pg.Level(err), "bus: prune the relayed messages", "err", err)
			} else if k > 0 {
				log.Debug("bus: pruned relayed messages", "messages", k)
			}
			if err := n.heal(topic, ""); err != nil && ctx.Err() == nil {
				log.Warn("bus: check the stream and the consumers on NATS", "err", err)
			}
		}
	}()
	for ctx.Err() == nil {
		err := n.runRelay(ctx, topic)
		if ctx.Err() != nil {
			return
		}
		log.Error("bus: the relay to NATS stopped; starting it again", "retry_in", n.cfg.RetryInterval.String(), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.cfg.RetryInterval):
		}
	}
}

// errRelayDisconnected nacks an outbox row at once while the relay's
// connection to NATS is down, so that the outbox subscriber's transaction
// does not stay open through the outage (it holds back every reader of
// the log, pg_snapshot_xmin being the whole server's).
var errRelayDisconnected = errors.New("bus: the relay is not connected to NATS")

// runRelay runs one Watermill router that forwards topic.
func (n *NATS) runRelay(ctx context.Context, topic string) error {
	conn, err := nats.Connect(n.cfg.URL, n.options("relay "+topic)...)
	if err != nil {
		return err
	}
	defer conn.Close()
	js, err := conn.JetStream()
	if err != nil {
		return err
	}
	sub, err := n.pg.Subscriber(RelayGroup)
	if err != nil {
		return err
	}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 30 * time.Second}, n.logger)
	if err != nil {
		return err
	}
	h := router.AddNoPublisherHandler(RelayGroup+"_"+topic, topic, sub, func(msg *message.Message) error {
		if !conn.IsConnected() {
			return errRelayDisconnected
		}
		if err := n.EnsureStream(topic); err != nil {
			return err
		}
		out := message.NewMessage(msg.UUID, msg.Payload)
		out.Metadata = msg.Metadata
		m, err := (&wnats.NATSMarshaler{}).Marshal(natsSubject(topic, msg.Metadata.Get("company_id")), out)
		if err != nil {
			return err
		}
		ack, err := js.PublishMsg(m, nats.MsgId(msg.UUID))
		var apiErr *nats.APIError
		switch {
		case errors.Is(err, nats.ErrNoStreamResponse):
			// No stream answered: NATS lost it. The retry publishes to
			// the stream made again, which the consumers receive.
			return errors.Join(err, n.heal(topic, ""))
		case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrStreamStoreFailed:
			return errors.Join(err, n.heal(topic, "it cannot store a message: "+err.Error()))
		case err != nil:
			return err
		}
		return n.checkRelayed(js, topic, ack)
	})
	// A few quick attempts, then the message is nacked: the outbox
	// subscriber's transaction, which holds back every reader of the
	// log, must not wait out an outage of NATS; the row is read again
	// after the subscriber's ResendInterval.
	retry := RetryWithBackoff(4, time.Second, n.logger)
	// While NATS is away, not even the quick attempts: each would wait
	// out JetStream's publish timeout inside that transaction.
	retry.ShouldRetry = func(p middleware.RetryParams) bool { return !errors.Is(p.Err, errRelayDisconnected) }
	h.AddMiddleware(retry.Middleware)
	err = router.Run(ctx)
	if err == nil && ctx.Err() == nil {
		err = errors.New("the router stopped")
	}
	return err
}

// Close stops the relays and closes the transport's connection. The
// subscribers are closed by their routers.
func (n *NATS) Close() error {
	n.mu.Lock()
	n.closed = true
	conn := n.conn
	n.mu.Unlock()
	n.cancel()
	n.wg.Wait()
	if conn != nil {
		conn.Close()
	}
	return nil
}
