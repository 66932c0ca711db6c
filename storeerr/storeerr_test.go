package storeerr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/storeerr"
)

// TestTranslate checks what a failure of the database means to whoever
// asked: a typed error that keeps its cause, or the error as it is.
func TestTranslate(t *testing.T) {
	typed := domain.Errorf(domain.Conflict, "taken")
	for _, tc := range []struct {
		name string
		err  error
		want domain.Code // "" for err returned as it is
	}{
		{"nil", nil, ""},
		{"invalid UTF-8", fmt.Errorf("readmodels: %w", &pgconn.PgError{Code: "22021"}), domain.Invalid},
		{"U+0000", &pgconn.PgError{Code: "22P05"}, domain.Invalid},
		{"admin shutdown", fmt.Errorf("readmodels: %w", &pgconn.PgError{Code: "57P01"}), domain.Unavailable},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, domain.Unavailable},
		{"connection dropped mid-reply", io.ErrUnexpectedEOF, domain.Unavailable},
		{"no connection in time", context.DeadlineExceeded, domain.Unavailable},
		{"event store unavailable", fmt.Errorf("%w (%w)", eventstore.ErrUnavailable, errors.New("connection refused")), domain.Unavailable},
		{"numeric value out of range", &pgconn.PgError{Code: "22003"}, ""},
		{"unique violation", &pgconn.PgError{Code: "23505"}, ""},
		{"a bug", errors.New("boom"), ""},
		// A layer below knew better: its answer stands, even over a cause
		// that would read as an outage.
		{"typed already", fmt.Errorf("%w (%w)", typed, context.Canceled), ""},
	} {
		got := storeerr.Translate(tc.err)
		if tc.want == "" {
			if got != tc.err {
				t.Errorf("%s: Translate(%v) = %v, want it as it is", tc.name, tc.err, got)
			}
			continue
		}
		if code := domain.ErrorCode(got); code != tc.want {
			t.Errorf("%s: Translate(%v) has code %q, want %q", tc.name, tc.err, code, tc.want)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%s: Translate(%v) = %v, lost its cause", tc.name, tc.err, got)
		}
	}
}
