package bus_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/bus"
)

func TestConsumerSettingsSetDefaults(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, tc := range map[string]struct {
		in, want bus.ConsumerSettings
	}{
		"zero takes the defaults": {
			want: bus.ConsumerSettings{Logger: slog.Default(), PollInterval: 100 * time.Millisecond,
				RetryMaxInterval: 5 * time.Second, MessageAttempts: 5, StallAfter: 30 * time.Second},
		},
		"set is kept": {
			in: bus.ConsumerSettings{Logger: logger, PollInterval: time.Millisecond,
				RetryMaxInterval: 2 * time.Millisecond, MessageAttempts: 1, StallAfter: time.Hour},
			want: bus.ConsumerSettings{Logger: logger, PollInterval: time.Millisecond,
				RetryMaxInterval: 2 * time.Millisecond, MessageAttempts: 1, StallAfter: time.Hour},
		},
		"partly set": {
			in: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond, MessageAttempts: 2},
			want: bus.ConsumerSettings{Logger: slog.Default(), PollInterval: 10 * time.Millisecond,
				RetryMaxInterval: 5 * time.Second, MessageAttempts: 2, StallAfter: 30 * time.Second},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := tc.in
			got.SetDefaults()
			if got.Logger != tc.want.Logger {
				t.Errorf("Logger = %p, want %p", got.Logger, tc.want.Logger)
			}
			// A Logger has unexported fields: compared above, by identity.
			got.Logger, tc.want.Logger = nil, nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsumerSettingsValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		in   bus.ConsumerSettings
		want string // the error's text, "" for none
	}{
		"zero":     {},
		"positive": {in: bus.ConsumerSettings{PollInterval: 1, RetryMaxInterval: 1, MessageAttempts: 1, StallAfter: 1}},
		"one negative": {
			in:   bus.ConsumerSettings{StallAfter: -time.Second},
			want: "x: Config.StallAfter is negative",
		},
		"every negative, each named": {
			in: bus.ConsumerSettings{PollInterval: -1, RetryMaxInterval: -1, MessageAttempts: -1, StallAfter: -1},
			want: "x: Config.PollInterval is negative\nx: Config.RetryMaxInterval is negative\n" +
				"x: Config.MessageAttempts is negative\nx: Config.StallAfter is negative",
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.in.Validate("x: Config.")
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}
