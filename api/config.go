package api

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config tunes the server. The zero value is usable: every field has a
// default.
type Config struct {
	// BaseDomain is the domain under which companies are served, as
	// <slug>.<BaseDomain>. Hosts are resolved by Deps.Companies; the API
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
	// X-Forwarded-For header is believed for the client address written to
	// the access log. Default none: the peer address is logged.
	TrustedProxies []string
	// Now is the clock of the rate limiter. Default time.Now.
	Now func() time.Time
}

// Default values of Config.
const (
	DefaultMaxBodyBytes   = 32 << 20
	DefaultMaxUploadBytes = 4 << 30
	DefaultRateLimit      = 50
	DefaultRateBurst      = 200
)

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
	if c.Registerer == nil || c.Gatherer == nil {
		errs = append(errs, errors.New("api: set both Registerer and Gatherer, or neither"))
	}
	if strings.ContainsAny(c.BaseDomain, "/: ") {
		errs = append(errs, fmt.Errorf("api: BaseDomain must be a bare domain name, got %q", c.BaseDomain))
	}
	return errors.Join(errs...)
}
