package systemtest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain/access"
)

// logIn asks for a token with email and password, with the TOTP code when
// one is given.
func (e *env) logIn(email, pass, code string, opts ...option) response {
	e.t.Helper()
	opts = append([]option{basic(email, pass)}, opts...)
	if code != "" {
		opts = append(opts, withHeader("Clientele-TOTP-Code", code))
	}
	return e.do(http.MethodPost, "/api/access-tokens/", opts...)
}

// frozenClock stops the limiters' clock, so that no bucket refills while
// a test counts.
func frozenClock(c *api.Config, _ *app.Application) {
	now := time.Now()
	c.Now = func() time.Time { return now }
}

// TestFailedLogInsCountedPerAccountAsLookedUp: every spelling of an email
// that reaches the user (surrounding spaces, any case) counts against the
// one account.
func TestFailedLogInsCountedPerAccountAsLookedUp(t *testing.T) {
	e := newEnv(t, frozenClock)
	email := e.admin.Email
	// The spellings do reach the same user.
	e.logIn(" "+strings.ToUpper(email), password, "").wantStatus(t, http.StatusOK)

	spellings := []string{" " + email, strings.ToUpper(email), "\t" + email + " ", "Admin@Acme.Test"}
	for i := range 10 {
		e.logIn(spellings[i%len(spellings)], "wrong password!", "").wantError(t, http.StatusUnauthorized, "unauthorized")
	}
	res := e.logIn(email, password, "")
	res.wantError(t, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "6" {
		t.Errorf("Retry-After %q, want 6", got)
	}
}

// TestFailedLogInsLimitedPerAddress: one address trying many made-up
// emails is stopped after 30 failures, whatever email it tries next and
// whatever X-Forwarded-For it sends (no proxy is trusted by default).
// Successful log-ins do not count.
func TestFailedLogInsLimitedPerAddress(t *testing.T) {
	e := newEnv(t, frozenClock)
	token := e.userToken(e.admin, acmeHost)
	for i := range 29 {
		e.logIn(fmt.Sprintf("nobody%d@acme.test", i), "wrong password!", "").wantError(t, http.StatusUnauthorized, "unauthorized")
	}
	for range 5 {
		e.userToken(e.staff, acmeHost)
	}
	e.logIn("nobody29@acme.test", "wrong password!", "").wantError(t, http.StatusUnauthorized, "unauthorized")

	res := e.logIn("someone-else@acme.test", "wrong password!", "")
	res.wantError(t, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2", got)
	}
	e.logIn("someone-else@acme.test", "wrong password!", "", withHeader("X-Forwarded-For", "198.51.100.7")).
		wantError(t, http.StatusTooManyRequests, "rate_limited")
	// The address waits, whoever logs in from it.
	e.logIn(e.admin.Email, password, "").wantError(t, http.StatusTooManyRequests, "rate_limited")
	// Requests with a token are not limited by it.
	e.do(http.MethodGet, "/api/integrations/", bearer(token)).wantStatus(t, http.StatusOK)
}

// TestFailedLogInsPerAddressBehindProxy: behind a trusted proxy the client
// address is taken from X-Forwarded-For, an IPv6 client counting as its
// /64.
func TestFailedLogInsPerAddressBehindProxy(t *testing.T) {
	e := newEnv(t, frozenClock, func(c *api.Config, _ *app.Application) { c.TrustedProxies = []string{"127.0.0.1"} })
	from := func(addr string) option { return withHeader("X-Forwarded-For", addr) }
	for i := range 30 {
		e.logIn(fmt.Sprintf("nobody%d@acme.test", i), "wrong password!", "", from(fmt.Sprintf("2001:db8:0:1::%x", i+1))).
			wantError(t, http.StatusUnauthorized, "unauthorized")
	}
	e.logIn("another@acme.test", "wrong password!", "", from("2001:db8:0:1:ffff::1")).
		wantError(t, http.StatusTooManyRequests, "rate_limited")
	e.logIn("another@acme.test", "wrong password!", "", from("2001:db8:0:2::1")).
		wantError(t, http.StatusUnauthorized, "unauthorized")
	e.logIn("another@acme.test", "wrong password!", "", from("198.51.100.7")).
		wantError(t, http.StatusUnauthorized, "unauthorized")
}

// heldAccess holds every password check until released, and records how
// many ran at once.
type heldAccess struct {
	app.Authenticator
	entered chan struct{}
	release chan struct{}

	mu       sync.Mutex
	in, peak int
}

func (h *heldAccess) AuthenticatePassword(ctx context.Context, companyID, email, password, code string) (access.Principal, error) {
	h.mu.Lock()
	h.in++
	h.peak = max(h.peak, h.in)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.in--
		h.mu.Unlock()
	}()
	h.entered <- struct{}{}
	<-h.release
	return h.Authenticator.AuthenticatePassword(ctx, companyID, email, password, code)
}

// TestPasswordChecksBounded: however many log-ins arrive at once, known
// users or not, at most Config.PasswordChecks are checked at once; the
// others wait a bounded time and are answered 429 with Retry-After.
func TestPasswordChecksBounded(t *testing.T) {
	const slots, logins = 2, 10
	held := &heldAccess{entered: make(chan struct{}, logins), release: make(chan struct{})}
	e := newEnv(t, func(c *api.Config, d *app.Application) {
		c.PasswordChecks = slots
		c.PasswordCheckWait = 100 * time.Millisecond
		held.Authenticator = d.Commands.Authenticator
		d.Commands.Authenticator = held
	})
	release := sync.OnceFunc(func() { close(held.release) })
	t.Cleanup(release) // before the server closes: it waits for the held requests

	answers := make(chan response, logins)
	for i := range logins {
		email := fmt.Sprintf("nobody%d@acme.test", i)
		if i%2 == 0 {
			email = e.admin.Email // a known user with a wrong password: the same path
		}
		go func() { answers <- e.logInAsync(email) }()
	}
	refused := 0
	for entered := 0; refused < logins-slots; {
		select {
		case <-held.entered:
			if entered++; entered > slots {
				t.Fatalf("%d password checks at once, want at most %d", entered, slots)
			}
		case res := <-answers:
			if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "1" {
				t.Fatalf("status %d, Retry-After %q while checks are held; want 429 with Retry-After 1: %s",
					res.status, res.header.Get("Retry-After"), res.body)
			}
			refused++
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d log-ins answered 429 in 30 s", refused)
		}
	}
	release()
	for range slots {
		if res := <-answers; res.status != http.StatusUnauthorized {
			t.Errorf("a held check answered %d, want 401: %s", res.status, res.body)
		}
	}
	if held.peak != slots {
		t.Errorf("peak of %d checks at once, want %d", held.peak, slots)
	}
}

// logInAsync is a log-in with a wrong password, for another goroutine: a
// failure to ask is reported in the answer's body, as t.Fatal may not be
// called there.
func (e *env) logInAsync(email string) response {
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/api/access-tokens/", nil)
	if err != nil {
		return response{body: []byte(err.Error())}
	}
	req.Host = acmeHost
	req.SetBasicAuth(email, "wrong password!")
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return response{body: []byte(err.Error())}
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: body}
}

// codes returns a valid code of secret now, and one valid at no step
// near now.
func codes(t *testing.T, secret string) (valid, wrong string) {
	t.Helper()
	now := time.Now()
	near := map[string]bool{}
	for _, d := range []time.Duration{-time.Minute, -30 * time.Second, 0, 30 * time.Second, time.Minute} {
		c, err := totp.GenerateCode(secret, now.Add(d))
		if err != nil {
			t.Fatal(err)
		}
		near[c] = true
		if d == 0 {
			valid = c
		}
	}
	for i := 0; ; i++ {
		if wrong = fmt.Sprintf("%06d", i*111111%1000000); !near[wrong] {
			return valid, wrong
		}
	}
}

// TestTOTPCodeUsedOnce: a code that opened a session cannot open another.
func TestTOTPCodeUsedOnce(t *testing.T) {
	e := newEnv(t)
	code, _ := codes(t, e.totp.TOTPSecret)
	e.logIn(e.totp.Email, password, code).wantStatus(t, http.StatusOK)
	e.logIn(e.totp.Email, password, code).wantError(t, http.StatusUnauthorized, "unauthorized")
}

// TestLogInFailuresLookAlike: a wrong password, an unknown user, a missing,
// wrong or used TOTP code all give the same answer, so none confirms a
// guessed password.
func TestLogInFailuresLookAlike(t *testing.T) {
	e := newEnv(t)
	code, wrong := codes(t, e.totp.TOTPSecret)
	e.logIn(e.totp.Email, password, code).wantStatus(t, http.StatusOK)

	tests := []struct {
		name              string
		email, pass, code string
	}{
		{"wrong password", e.admin.Email, "wrong password!", ""},
		{"unknown user", "nobody@acme.test", password, ""},
		{"wrong password with two-factor", e.totp.Email, "wrong password!", wrong},
		{"missing code", e.totp.Email, password, ""},
		{"wrong code", e.totp.Email, password, wrong},
		{"code used already", e.totp.Email, password, code},
	}
	var first response
	for i, tt := range tests {
		res := e.logIn(tt.email, tt.pass, tt.code)
		res.wantError(t, http.StatusUnauthorized, "unauthorized")
		if i == 0 {
			first = res
			continue
		}
		if string(res.body) != string(first.body) || res.header.Get("WWW-Authenticate") != first.header.Get("WWW-Authenticate") {
			t.Errorf("%s: answer %s, want the same as %s: %s", tt.name, res.body, tests[0].name, first.body)
		}
	}
}
