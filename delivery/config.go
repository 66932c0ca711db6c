package delivery

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/internal/crypto"
)

// DisableFunc disables an outlet whose receiver answered 410 Gone.
type DisableFunc func(ctx context.Context, companyID, datatargetID, outletID, reason string) error

// Config configures a Deliverer. Zero fields take their defaults.
type Config struct {
	// Pool is the database of the datatargets. Required.
	Pool *pgxpool.Pool
	// Keys seals the raw texts of each attempt the outlet log keeps, with
	// a key of the attempt. Required.
	Keys crypto.KeyStore
	// Disable disables an outlet (commands.DisableOutlet as the system).
	// Required.
	Disable DisableFunc
	// AllowCIDRs are networks that may be dialled although the SSRF guard
	// refuses them otherwise (loopback, private, link-local, ...).
	AllowCIDRs []netip.Prefix
	// TLSConfig is the base TLS configuration of https receivers (e.g. a
	// private CA's RootCAs). Default: the system's roots.
	TLSConfig *tls.Config
	// Holder names this process in the leases it takes. Default: host
	// name, process id and a random suffix.
	Holder string
	// LeaseTTL is how long a lease lasts unless renewed; a worker renews it
	// every third of it. A crashed process's outlets wait this long before
	// another process resumes them. Default 30s.
	LeaseTTL time.Duration
	// PollInterval is how often the dispatcher looks for outlets with
	// messages to deliver: the delay before an idle outlet sends a new
	// message. Default 200ms.
	PollInterval time.Duration
	// RequestTimeout bounds one attempt, from dialling to the end of the
	// reply. Default 30s.
	RequestTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay before a failed batch is
	// retried: MinBackoff doubling with every failure up to MaxBackoff, with
	// jitter. Defaults 1s and 1h.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter bounds the delay a receiver may ask for with
	// Retry-After. Default 24h.
	MaxRetryAfter time.Duration
	// MaxWorkers bounds the outlets this process delivers at once.
	// Default 64.
	MaxWorkers int
	// MaxRequestLog is the largest raw request kept in the log; a larger
	// one is not kept (http_request_available false). Default 1 MiB.
	MaxRequestLog int
	// MaxReplyLog is how much of a raw reply (status line, headers, body)
	// is kept in the log; the rest is cut off. Default 64 KiB.
	MaxReplyLog int
	// Prefetch is how many messages a worker reads at once. Default 1,000.
	Prefetch int
	// Retention says how long the outlet log's raw texts and delivered
	// messages are kept (retention.go).
	Retention Retention
	// Registerer, if set, registers the delivery metrics.
	Registerer prometheus.Registerer
	// Logger receives worker failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of attempt dates and signatures. Default time.Now.
	Now func() time.Time
}

// Default values of Config.
const (
	DefaultLeaseTTL       = 30 * time.Second
	DefaultPollInterval   = 200 * time.Millisecond
	DefaultRequestTimeout = 30 * time.Second
	DefaultMinBackoff     = time.Second
	DefaultMaxBackoff     = time.Hour
	DefaultMaxRetryAfter  = 24 * time.Hour
	DefaultMaxWorkers     = 64
	DefaultMaxRequestLog  = 1 << 20
	DefaultMaxReplyLog    = 64 << 10
	DefaultPrefetch       = 1000
)

func (c *Config) setDefaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.LeaseTTL, DefaultLeaseTTL)
	set(&c.PollInterval, DefaultPollInterval)
	set(&c.RequestTimeout, DefaultRequestTimeout)
	set(&c.MinBackoff, DefaultMinBackoff)
	set(&c.MaxBackoff, DefaultMaxBackoff)
	set(&c.MaxRetryAfter, DefaultMaxRetryAfter)
	setInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	setInt(&c.MaxWorkers, DefaultMaxWorkers)
	setInt(&c.MaxRequestLog, DefaultMaxRequestLog)
	setInt(&c.MaxReplyLog, DefaultMaxReplyLog)
	setInt(&c.Prefetch, DefaultPrefetch)
	if c.Holder == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		c.Holder = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	c.Retention.setDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if c.Pool == nil {
		errs = append(errs, errors.New("delivery: Pool is nil"))
	}
	if c.Keys.Keyring == nil {
		errs = append(errs, errors.New("delivery: Keys has no keyring"))
	}
	if c.Disable == nil {
		errs = append(errs, errors.New("delivery: Disable is nil"))
	}
	for name, d := range map[string]time.Duration{"LeaseTTL": c.LeaseTTL, "PollInterval": c.PollInterval,
		"RequestTimeout": c.RequestTimeout, "MinBackoff": c.MinBackoff, "MaxBackoff": c.MaxBackoff, "MaxRetryAfter": c.MaxRetryAfter} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("delivery: %s must be positive, got %v", name, d))
		}
	}
	if c.MaxBackoff < c.MinBackoff {
		errs = append(errs, fmt.Errorf("delivery: MaxBackoff %v is below MinBackoff %v", c.MaxBackoff, c.MinBackoff))
	}
	if c.LeaseTTL < 3*c.PollInterval {
		errs = append(errs, fmt.Errorf("delivery: LeaseTTL %v must be at least three PollIntervals (%v)", c.LeaseTTL, c.PollInterval))
	}
	for name, n := range map[string]int{"MaxWorkers": c.MaxWorkers, "MaxRequestLog": c.MaxRequestLog, "MaxReplyLog": c.MaxReplyLog, "Prefetch": c.Prefetch} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("delivery: %s must be positive, got %d", name, n))
		}
	}
	errs = append(errs, c.Retention.validate()...)
	return errors.Join(errs...)
}
