package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config tunes the server. The zero value is usable: every field has a
// default.
type Config struct {
	// BaseDomain is the domain under which companies are served, as
	// <slug>.<BaseDomain>. Hosts are resolved by app.Queries.Companies; the API
	// uses it only to say where a company is found when a host is unknown.
	BaseDomain string
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413 request_too_large. Default 32 MiB.
	MaxBodyBytes int64
	// MaxUploadBytes replaces MaxBodyBytes for uploads (POST
	// /api/<entity>/upload/), which are streamed to staging and never held
	// in memory. Default 4 GiB.
	MaxUploadBytes int64
	// RateLimit is the sustained number of requests per second allowed to
	// one principal (one access token, or one user authenticating with a
	// password). Default 50. math.Inf(1) disables rate limiting.
	RateLimit float64
	// RateBurst is how many requests a principal may make at once before
	// RateLimit applies. Default 200.
	RateBurst int
	// Logger receives one access log line per request and every internal
	// (5xx) error. Default slog.Default().
	Logger *slog.Logger
	// Registerer registers the HTTP metrics and Gatherer is served at
	// /metrics. Set both or neither; by default both are one new registry
	// that holds only the HTTP metrics.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// TrustedProxies lists the addresses or CIDRs of reverse proxies whose
	// X-Forwarded-For header is believed for the client address: the one
	// written to the access log and whose failed log-ins are counted.
	// Default none: the peer address is used, and a client cannot pick
	// its own address (and so a fresh log-in budget) with a header.
	TrustedProxies []string
	// Now is the clock of the rate limiter. Default time.Now.
	Now func() time.Time

	// PasswordChecks is how many password checks (argon2id, 64 MiB each
	// with the default parameters) may run at once, known and unknown
	// users alike: it bounds the memory that log-ins can take. Default
	// max(1, GOMAXPROCS/2).
	PasswordChecks int
	// PasswordCheckWait is how long a log-in waits for a free check before
	// it is answered 429. Default 1 s.
	PasswordCheckWait time.Duration
	// ReadHeaderTimeout bounds the time to read a request's headers;
	// IdleTimeout how long a keep-alive connection may wait for its next
	// request (Server.HTTPServer). Defaults 10 s and 2 min.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// ReadTimeout bounds the time to read a request body, from the
	// request's start; for uploads, which may stream for hours, it bounds
	// each wait for more of the body instead. Default 1 min.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time to answer a request, from its start,
	// uploads excepted. Default 5 min.
	WriteTimeout time.Duration

	// RefusedOutletURL returns why the delivery's SSRF guard will refuse
	// to connect to an outlet's URL, or "" (delivery.RefusedURL with the
	// deliverer's allowed networks): an outlet created or changed with
	// such a URL is answered with a warning. Default none: no warning.
	RefusedOutletURL func(ctx context.Context, rawURL string) string

	// SegmentMembersOff says that this deployment does not compute the
	// members of segments (serve --segment-members=false): the routes
	// that answer members, history and previews answer 409 saying so,
	// rather than an empty list that looks like an answer.
	SegmentMembersOff bool
}

// Default values of Config.
const (
	DefaultMaxBodyBytes   = 32 << 20
	DefaultMaxUploadBytes = 4 << 30
	DefaultRateLimit      = 50
	DefaultRateBurst      = 200

	DefaultPasswordCheckWait = time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultReadTimeout       = time.Minute
	DefaultWriteTimeout      = 5 * time.Minute
)

// DefaultPasswordChecks is the default of Config.PasswordChecks: half the
// processors, as argon2id keeps one busy per lane while it runs.
func DefaultPasswordChecks() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func (c *Config) setDefaults() {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxUploadBytes == 0 {
		c.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if c.RateLimit == 0 {
		c.RateLimit = DefaultRateLimit
	}
	if c.RateBurst == 0 {
		c.RateBurst = DefaultRateBurst
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registerer == nil && c.Gatherer == nil {
		reg := prometheus.NewRegistry()
		c.Registerer, c.Gatherer = reg, reg
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.PasswordChecks == 0 {
		c.PasswordChecks = DefaultPasswordChecks()
	}
	for _, d := range []struct {
		field *time.Duration
		def   time.Duration
	}{
		{&c.PasswordCheckWait, DefaultPasswordCheckWait},
		{&c.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{&c.IdleTimeout, DefaultIdleTimeout},
		{&c.ReadTimeout, DefaultReadTimeout},
		{&c.WriteTimeout, DefaultWriteTimeout},
	} {
		if *d.field == 0 {
			*d.field = d.def
		}
	}
}

// Validate reports every problem of the configuration at once. Zero fields
// are valid: they take their defaults.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("api: MaxBodyBytes must be positive, got %d", c.MaxBodyBytes))
	}
	if c.MaxUploadBytes < 0 {
		errs = append(errs, fmt.Errorf("api: MaxUploadBytes must be positive, got %d", c.MaxUploadBytes))
	}
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) {
		errs = append(errs, fmt.Errorf("api: RateLimit must be positive, got %g", c.RateLimit))
	}
	if c.RateBurst < 0 {
		errs = append(errs, fmt.Errorf("api: RateBurst must be positive, got %d", c.RateBurst))
	}
	if c.PasswordChecks < 0 {
		errs = append(errs, fmt.Errorf("api: PasswordChecks must be positive, got %d", c.PasswordChecks))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"PasswordCheckWait", c.PasswordCheckWait}, {"ReadHeaderTimeout", c.ReadHeaderTimeout},
		{"IdleTimeout", c.IdleTimeout}, {"ReadTimeout", c.ReadTimeout}, {"WriteTimeout", c.WriteTimeout},
	} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("api: %s must be positive, got %v", d.name, d.d))
		}
	}
	if c.Registerer == nil || c.Gatherer == nil {
		errs = append(errs, errors.New("api: set both Registerer and Gatherer, or neither"))
	}
	if strings.ContainsAny(c.BaseDomain, "/: ") {
		errs = append(errs, fmt.Errorf("api: BaseDomain must be a bare domain name, got %q", c.BaseDomain))
	}
	return errors.Join(errs...)
}
