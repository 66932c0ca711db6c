package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/storeerr"
)

// failingCompanies is a Companies whose look-ups fail with err while it is
// set, as they do when the database goes away: every tenant route starts
// with that look-up. It types err as the read models do at their
// boundary with the database (storeerr.Translate, readmodels/db.go), which
// readmodels' own tests check against a real server.
type failingCompanies struct {
	app.Companies
	mu  sync.Mutex
	err error
}

func (f *failingCompanies) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *failingCompanies) ByHost(ctx context.Context, host string) (company.Company, error) {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return company.Company{}, fmt.Errorf("readmodels: company of %s: %w", host, storeerr.Translate(err))
	}
	return f.Companies.ByHost(ctx, host)
}

// TestDatabaseUnavailableIs503 checks the one mapping of a database that
// is away: 503 unavailable with Retry-After, logged as a warning, for
// each way pgx reports it; while an error of the data or of the code
// stays a 500.
func TestDatabaseUnavailableIs503(t *testing.T) {
	companies := &failingCompanies{}
	e := newEnv(t, func(_ *api.Config, d *app.Application) {
		companies.Companies = d.Queries.Companies
		d.Queries.Companies = companies
	})
	token := e.userToken(e.admin, acmeHost)
	for _, tc := range []struct {
		name string
		err  error
	}{
		// What pgx returns when the server drops the connection mid-reply
		// (pg_ctl stop -m immediate); it was answered 400 "the request
		// body ends before its JSON value does".
		{"connection dropped", io.ErrUnexpectedEOF},
		{"recovering", &pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is in recovery mode"}},
		{"no connection in time", context.DeadlineExceeded},
		{"deadlock", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.logs.String())
			companies.fail(tc.err)
			defer companies.fail(nil)
			res := e.do(http.MethodGet, "/api/integrations/", bearer(token))
			b := res.wantError(t, http.StatusServiceUnavailable, "unavailable")
			if got := res.header.Get("Retry-After"); got != "5" {
				t.Errorf("Retry-After %q, want 5", got)
			}
			if strings.Contains(b.Error.Message, tc.err.Error()) {
				t.Errorf("cause in the answer: %q", b.Error.Message)
			}
			logs := e.logs.String()[before:]
			if strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, `"level":"WARN"`) || !strings.Contains(logs, tc.err.Error()) {
				t.Errorf("want one warning with the cause, no error:\n%s", logs)
			}
		})
	}

	// An error of the data or the code is not the database's absence.
	companies.fail(&pgconn.PgError{Code: "42P01", Message: `relation "companies" does not exist`})
	e.do(http.MethodGet, "/api/integrations/", bearer(token)).wantError(t, http.StatusInternalServerError, "internal_error")
	companies.fail(errors.New("boom"))
	e.do(http.MethodGet, "/api/integrations/", bearer(token)).wantError(t, http.StatusInternalServerError, "internal_error")
	companies.fail(nil)

	// A body cut short is still the client's mistake, although it ends
	// with the same io.ErrUnexpectedEOF.
	e.do(http.MethodPost, "/api/integrations/", bearer(token), rawBody(`{"integration_name": "erp", "parameters": {`)).
		wantError(t, http.StatusBadRequest, "invalid_request")
}

// TestReadyzIsBounded checks that the readiness check runs with a short
// deadline, so that a database that does not answer makes readyz answer
// 503 quickly instead of hanging the probe.
func TestReadyzIsBounded(t *testing.T) {
	var left time.Duration // from the start of the check to its deadline
	e := newEnv(t, func(_ *api.Config, d *app.Application) {
		d.Queries.Ready = func(ctx context.Context) error {
			if deadline, ok := ctx.Deadline(); ok {
				left = time.Until(deadline)
			}
			<-ctx.Done() // a ping that never gets its answer
			return fmt.Errorf("database: %w", ctx.Err())
		}
	})
	res := e.do(http.MethodGet, "/readyz")
	res.wantError(t, http.StatusServiceUnavailable, "unavailable")
	if left <= 0 || left > api.ReadyTimeout {
		t.Errorf("the readiness check may take %v, want at most %v", left, api.ReadyTimeout)
	}
	if got := res.header.Get("Retry-After"); got == "" {
		t.Error("no Retry-After on 503")
	}
}
