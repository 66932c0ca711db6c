package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clientele/clientele/internal/wake"
)

// ConsumerSettings are the settings shared by the ordered consumers built
// on Resumer, the projection runtime's and the import worker's: their
// configurations embed it, and each says next to it what the settings
// mean for its own messages and keys. Zero fields take the defaults
// documented on each.
type ConsumerSettings struct {
	// Logger receives the consumer's and Watermill's logs. Default
	// slog.Default().
	Logger *slog.Logger
	// PollInterval is how often an idle consumer looks for new messages:
	// its latency when all is quiet. Default 100ms. Unused when the
	// configuration embedding the settings sets its own Transport.
	PollInterval time.Duration
	// Wake, when set, wakes an idle consumer at once after a commit of
	// this process (PostgresConfig.Wake): PollInterval is then the latency
	// of messages written by other processes only. The projection runtime
	// defaults it to its store's commits (eventstore.CommitsOf). Unused
	// with a Transport of the configuration's own.
	Wake *wake.Signal
	// RetryMaxInterval caps the backoff between the attempts of one
	// delivery of a failing message (ResumerConfig.RetryMaxInterval).
	// Default 5s.
	RetryMaxInterval time.Duration
	// MessageAttempts is the number of attempts of one delivery before it
	// gives up (ResumerConfig.Attempts): it then acks its message and
	// hands the message's key to the resume loop, so the work is never
	// skipped. Default 5.
	MessageAttempts int
	// StallAfter is how long a key's work may stand still with more
	// pending before the consumer catches the key up itself; it also caps
	// the backoff of a key whose catch-up keeps failing
	// (ResumerConfig.MaxBackoff). Default 30s.
	StallAfter time.Duration
}

// SetDefaults sets the zero settings to their defaults. A configuration
// embedding ConsumerSettings calls it from its own defaults: it sets none
// of that configuration's other fields.
func (s *ConsumerSettings) SetDefaults() {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.PollInterval == 0 {
		s.PollInterval = 100 * time.Millisecond
	}
	if s.RetryMaxInterval == 0 {
		s.RetryMaxInterval = 5 * time.Second
	}
	if s.MessageAttempts == 0 {
		s.MessageAttempts = 5
	}
	if s.StallAfter == 0 {
		s.StallAfter = 30 * time.Second
	}
}

// Validate reports every negative setting at once, one error each that
// names the setting after prefix, the embedding configuration's own
// prefix (such as "imports: ImportWorkerConfig."). The configuration's
// Validate calls it with that prefix.
func (s ConsumerSettings) Validate(prefix string) error {
	var errs []error
	for _, f := range []struct {
		name     string
		negative bool
	}{
		{"PollInterval", s.PollInterval < 0},
		{"RetryMaxInterval", s.RetryMaxInterval < 0},
		{"MessageAttempts", s.MessageAttempts < 0},
		{"StallAfter", s.StallAfter < 0},
	} {
		if f.negative {
			errs = append(errs, fmt.Errorf("%s%s is negative", prefix, f.name))
		}
	}
	return errors.Join(errs...)
}
