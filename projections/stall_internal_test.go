package projections

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestPermanent: what parks a company and what stops the projector as a
// whole.
func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a value the table refuses", &pgconn.PgError{Code: "22003"}, true},
		{"a bug", errors.New("boom"), true},
		{"a panic", &panicError{value: "boom"}, true},
		{"an outage", fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P01"}), false},
		{"a dropped connection", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), false},
		{"an older binary after a migration", fmt.Errorf("x: %w", &pgconn.PgError{Code: "42703"}), false},
		{"a missing table", &pgconn.PgError{Code: "42P01"}, false},
	} {
		if got := Permanent(tc.err); got != tc.want {
			t.Errorf("%s: permanent(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
