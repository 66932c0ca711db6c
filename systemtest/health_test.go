package systemtest_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
)

func TestHealth(t *testing.T) {
	var notReady error
	e := newEnv(t, func(_ *api.Config, d *app.Application) {
		d.Queries.Ready = func(context.Context) error { return notReady }
	})
	e.do(http.MethodGet, "/healthz").wantStatus(t, http.StatusOK)
	e.do(http.MethodGet, "/readyz").wantStatus(t, http.StatusOK)

	notReady = errors.New("database: connection refused")
	e.do(http.MethodGet, "/healthz").wantStatus(t, http.StatusOK)
	b := e.do(http.MethodGet, "/readyz").wantError(t, http.StatusServiceUnavailable, "unavailable")
	if strings.Contains(b.Error.Message, "refused") {
		t.Errorf("cause in the answer: %q", b.Error.Message)
	}
	if !strings.Contains(e.logs.String(), "connection refused") {
		t.Error("cause of not ready not logged")
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	token := e.userToken(e.admin, acmeHost)
	e.do(http.MethodGet, "/integrations", bearer(token)).wantStatus(t, http.StatusOK)
	e.do(http.MethodGet, "/no/such/path/12345", outsideContract("a path the service does not have")).wantStatus(t, http.StatusNotFound)

	res := e.do(http.MethodGet, "/metrics")
	res.wantStatus(t, http.StatusOK)
	body := string(res.body)
	for _, want := range []string{
		`http_requests_total{method="GET",route="/api/integrations/",status="200"} 1`,
		`http_requests_total{method="POST",route="/api/access-tokens/",status="200"} 1`,
		`http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`http_request_duration_seconds_count{method="GET",route="/api/integrations/"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "12345") {
		t.Error("a raw path is a label value")
	}
}

func TestRequestID(t *testing.T) {
	e := newEnv(t)
	res := e.do(http.MethodGet, "/healthz", withHeader("X-Request-Id", "abc-123"))
	if got := res.header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("X-Request-Id %q, want the client's abc-123", got)
	}
	for _, sent := range []string{"", "bad id with spaces", strings.Repeat("x", 200)} {
		res := e.do(http.MethodGet, "/healthz", withHeader("X-Request-Id", sent))
		if got := res.header.Get("X-Request-Id"); got == "" || got == sent {
			t.Errorf("sent %q: X-Request-Id %q, want a new one", sent, got)
		}
	}
	// The access log has one line per request with its fields.
	token := e.userToken(e.admin, acmeHost)
	e.do(http.MethodGet, "/api/integrations/", bearer(token), withHeader("X-Request-Id", "req-logged"))
	line := regexp.MustCompile(`.*"req-logged".*`).FindString(e.logs.String())
	for _, want := range []string{`"method":"GET"`, `"route":"/api/integrations/"`, `"status":200`, `"company":"` + e.acme.ID + `"`, `"actor":"tokens/`, `"duration"`} {
		if !strings.Contains(line, want) {
			t.Errorf("access log line lacks %s: %s", want, line)
		}
	}
}
