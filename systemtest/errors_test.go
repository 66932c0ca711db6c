package systemtest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain/company"
)

func TestRoutingErrors(t *testing.T) {
	e := newEnv(t)
	token := e.userToken(e.admin, acmeHost)

	unrouted := outsideContract("a path the service does not have")
	e.do(http.MethodGet, "/api/nothing-here/", bearer(token), unrouted).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/", bearer(token), unrouted).wantError(t, http.StatusNotFound, "not_found")
	// An upload of an entity that cannot be imported is a bad request, not
	// a missing page (decisions: unknown entity is a whole-request 400).
	for _, path := range []string{"/api/gadgets/upload/", "/gadgets/upload", "/api/gadgets/upload"} {
		e.do(http.MethodPost, path, bearer(token), outsideContract("an upload of an entity that does not exist")).wantError(t, http.StatusBadRequest, "invalid_request")
	}

	unserved := outsideContract("a method the path does not have")
	res := e.do(http.MethodDelete, "/api/integrations/", bearer(token), unserved)
	res.wantError(t, http.StatusMethodNotAllowed, "method_not_allowed")
	if allow := res.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow %q, want GET and POST", allow)
	}
	e.do(http.MethodPut, "/api/access-tokens/", bearer(token), unserved).wantError(t, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.MaxBodyBytes = 1024 })
	token := e.userToken(e.admin, acmeHost)
	big := `{"name": "` + strings.Repeat("x", 2048) + `"}`

	// Declared length over the limit: refused before reading.
	e.do(http.MethodPost, "/api/integrations/", bearer(token), rawBody(big)).wantError(t, http.StatusRequestEntityTooLarge, "request_too_large")
	// Unknown length: refused when the reading passes the limit.
	e.do(http.MethodPost, "/api/integrations/", bearer(token), streamBody(strings.NewReader(big))).wantError(t, http.StatusRequestEntityTooLarge, "request_too_large")
	// Under the limit: fine.
	e.do(http.MethodPost, "/api/integrations/", bearer(token), rawBody(`{"name": "small"}`)).wantStatus(t, http.StatusOK)
}

// panicky is a Companies that panics for one host.
type panicky struct{ app.Companies }

func (p panicky) ByHost(ctx context.Context, host string) (company.Company, error) {
	if host == "panic.localhost" {
		panic("boom")
	}
	return p.Companies.ByHost(ctx, host)
}

func TestPanicIsInternalError(t *testing.T) {
	e := newEnv(t, func(_ *api.Config, d *app.Application) { d.Queries.Companies = panicky{d.Queries.Companies} })
	res := e.do(http.MethodGet, "/api/integrations/", host("panic.localhost"), withHeader("X-Request-Id", "req-panic-1"))
	b := res.wantError(t, http.StatusInternalServerError, "internal_error")
	if strings.Contains(b.Error.Message, "boom") {
		t.Errorf("internal detail in the answer: %q", b.Error.Message)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, "boom") || !strings.Contains(logs, "req-panic-1") {
		t.Errorf("panic not logged as an error with its request id:\n%s", logs)
	}
	// The server goes on serving.
	e.do(http.MethodGet, "/healthz").wantStatus(t, http.StatusOK)
}

func TestOnlyInternalErrorsAreLoggedAsErrors(t *testing.T) {
	e := newEnv(t)
	e.do(http.MethodGet, "/api/integrations/").wantStatus(t, http.StatusUnauthorized)
	e.do(http.MethodGet, "/api/nothing/", outsideContract("a path the service does not have")).wantStatus(t, http.StatusNotFound)
	if logs := e.logs.String(); strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("client errors logged as errors:\n%s", logs)
	}
}
