package systemtest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
)

func TestRateLimit(t *testing.T) {
	frozen := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	e := newEnv(t, func(c *api.Config, _ *app.Application) {
		c.RateLimit = 0.5 // one request every 2 s
		c.RateBurst = 2
		c.Now = func() time.Time { return frozen }
	})
	// Each token was made with a password: that request counted for the
	// user, not for the token.
	token := e.userToken(e.admin, acmeHost)
	other := e.userToken(e.staff, acmeHost)

	for range 2 {
		e.do(http.MethodGet, "/api/integrations/", bearer(token)).wantStatus(t, http.StatusOK)
	}
	res := e.do(http.MethodGet, "/api/integrations/", bearer(token))
	res.wantError(t, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2", got)
	}
	// Another principal has its own bucket.
	e.do(http.MethodGet, "/api/integrations/", bearer(other)).wantStatus(t, http.StatusOK)
	// Operations are not limited.
	for range 3 {
		e.do(http.MethodGet, "/healthz").wantStatus(t, http.StatusOK)
	}
}
