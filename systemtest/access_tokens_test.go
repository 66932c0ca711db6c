package systemtest_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
)

func TestCreateAccessTokenWithPassword(t *testing.T) {
	e := newEnv(t)
	res := e.do(http.MethodPost, "/api/access-tokens/", basic(e.admin.Email, password))
	res.wantStatus(t, http.StatusOK)
	var a tokenAnswer
	res.decode(t, &a)
	tok := a.AccessToken
	if tok.Token == "" {
		t.Fatalf("no token value in the creation answer: %s", res.body)
	}
	checkHint(t, tok.Hint, tok.Token)
	golden(t, "access_token_user", res.body,
		tok.ID, "<token_id>", e.admin.ID, "<admin_id>", tok.Token, "<token>", tok.Hint, "<hint>")

	// The value works, and is never shown again.
	res = e.do(http.MethodGet, "/api/integrations/", bearer(tok.Token))
	res.wantStatus(t, http.StatusOK)
	if strings.Contains(string(res.body), tok.Token) {
		t.Errorf("token value in a later answer: %s", res.body)
	}
	if logs := e.logs.String(); strings.Contains(logs, tok.Token) {
		t.Errorf("token value in the logs:\n%s", logs)
	}
}

// checkHint checks that hint masks value: first and last characters kept,
// asterisks between, never the value itself.
func checkHint(t *testing.T, hint, value string) {
	t.Helper()
	if hint == value || !regexp.MustCompile(`^[^*]{1,4}\*+[^*]{1,4}$`).MatchString(hint) ||
		hint[:2] != value[:2] || hint[len(hint)-2:] != value[len(value)-2:] {
		t.Errorf("hint %q does not mask the token", hint)
	}
}

func TestCreateAccessTokenTOTP(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		code   func() string
		status int
	}{
		{"missing code", func() string { return "" }, http.StatusUnauthorized},
		{"wrong code", func() string { return "000000" }, http.StatusUnauthorized},
		{"right code", func() string {
			code, err := totp.GenerateCode(e.totp.TOTPSecret, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return code
		}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []option{basic(e.totp.Email, password)}
			if code := tt.code(); code != "" {
				opts = append(opts, withHeader("Clientele-TOTP-Code", code))
			}
			res := e.do(http.MethodPost, "/api/access-tokens/", opts...)
			if tt.status != http.StatusOK {
				res.wantError(t, tt.status, "unauthorized")
				return
			}
			res.wantStatus(t, tt.status)
		})
	}
}

func TestCreateAccessTokenRefused(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	integration := e.createIntegration(admin, "Shop")
	tests := []struct {
		name   string
		opts   []option
		status int
		code   string
	}{
		{"wrong password", []option{basic(e.admin.Email, "wrong password!")}, http.StatusUnauthorized, "unauthorized"},
		{"unknown user", []option{basic("nobody@acme.test", password)}, http.StatusUnauthorized, "unauthorized"},
		{"user of another company", []option{basic(e.globexAd.Email, password)}, http.StatusUnauthorized, "unauthorized"},
		{"no credentials", nil, http.StatusUnauthorized, "unauthorized"},
		{"staff for an integration", []option{bearer(staff), jsonBody(map[string]any{"owner_id": "integrations/" + integration})}, http.StatusForbidden, "forbidden"},
		{"bad owner", []option{bearer(admin), jsonBody(map[string]any{"owner_id": "robots/1"})}, http.StatusUnprocessableEntity, "validation_error"},
		{"bad scope", []option{bearer(admin), jsonBody(map[string]any{"scopes": []map[string]string{{"method": "FETCH", "path": "/x/"}}})}, http.StatusUnprocessableEntity, "validation_error"},
		{"not JSON", []option{bearer(admin), rawBody("{name:")}, http.StatusBadRequest, "invalid_request"},
		{"wrong type", []option{bearer(admin), rawBody(`{"name": 5}`)}, http.StatusBadRequest, "invalid_request"},
		{"truncated", []option{bearer(admin), rawBody(`{"name": "x"`)}, http.StatusBadRequest, "invalid_request"},
		{"two values", []option{bearer(admin), rawBody(`{} {}`)}, http.StatusBadRequest, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.do(http.MethodPost, "/api/access-tokens/", tt.opts...).wantError(t, tt.status, tt.code)
		})
	}
}

func TestPasswordAttemptsLimited(t *testing.T) {
	frozen := time.Now()
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.Now = func() time.Time { return frozen } })
	for i := range 10 {
		if res := e.do(http.MethodPost, "/api/access-tokens/", basic(e.admin.Email, "wrong password!")); res.status != http.StatusUnauthorized {
			t.Fatalf("attempt %d: status %d, want 401", i, res.status)
		}
	}
	// Even the right password waits now, for this email only.
	res := e.do(http.MethodPost, "/api/access-tokens/", basic(strings.ToUpper(e.admin.Email), password))
	res.wantError(t, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "6" {
		t.Errorf("Retry-After %q, want 6", got)
	}
	e.do(http.MethodPost, "/api/access-tokens/", basic(e.staff.Email, password)).wantStatus(t, http.StatusOK)
}
