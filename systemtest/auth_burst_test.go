package systemtest_test

import (
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/internal/secret"
)

// TestLogInBurst sends many log-ins of made-up users, each from its own
// address (behind a trusted proxy, so no per-address limit stops them
// before their password is checked), together with many token requests,
// all at once, with the real password hashing parameters (64 MiB each).
// The excess is answered 429, the server stays up, and the memory it
// takes from the system grows by no more than the documented bound
// (docs/access.md): PasswordChecks x 64 MiB, twice over for the garbage
// collector's headroom, plus 64 MiB for the rest of the burst.
// docs/benchmarks.md records its figures.
func TestLogInBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 64 MiB passwords")
	}
	const (
		slots    = 2
		logins   = 64
		requests = 200
		burst    = 50
		mib      = 1 << 20
	)
	params := secret.PasswordParams
	secret.PasswordParams = argon2id.DefaultParams
	t.Cleanup(func() { secret.PasswordParams = params })
	e := newSerialEnv(t, frozenClock, func(c *api.Config, _ *app.Application) {
		c.PasswordChecks = slots
		c.TrustedProxies = []string{"127.0.0.1"}
		c.RateBurst = burst
	})
	token := e.userToken(e.admin, acmeHost)
	client := e.srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = logins + requests

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()

	type answer struct {
		login      bool
		status     int
		retryAfter string
		err        error
	}
	answers := make(chan answer, logins+requests)
	var wg sync.WaitGroup
	send := func(login bool, req *http.Request) {
		defer wg.Done()
		res, err := client.Do(req)
		if err != nil {
			answers <- answer{login: login, err: err}
			return
		}
		res.Body.Close()
		answers <- answer{login: login, status: res.StatusCode, retryAfter: res.Header.Get("Retry-After")}
	}
	for i := range max(logins, requests) {
		if i < logins {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/access-tokens/", nil)
			req.Host = acmeHost
			req.SetBasicAuth(fmt.Sprintf("nobody%d@acme.test", i), "wrong password!")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
			wg.Add(1)
			go send(true, req)
		}
		if i < requests {
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/integrations/", nil)
			req.Host = acmeHost
			req.Header.Set("Authorization", "Bearer "+token)
			wg.Add(1)
			go send(false, req)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	close(answers)

	count := map[string]int{}
	for a := range answers {
		if a.err != nil {
			t.Fatalf("request failed: %v", a.err)
		}
		kind := "request"
		if a.login {
			kind = "login"
		}
		count[fmt.Sprintf("%s %d", kind, a.status)]++
		if a.status == http.StatusTooManyRequests && a.retryAfter == "" {
			t.Errorf("%s answered 429 without Retry-After", kind)
		}
	}
	grown := int64(after.Sys) - int64(before.Sys)
	bound := int64(2*slots*64*mib + 64*mib)
	t.Logf("%d log-ins and %d token requests in %v: %v; memory from the system grew by %d MiB (bound %d MiB), to %d MiB; %d GCs",
		logins, requests, elapsed.Round(time.Millisecond), count, grown/mib, bound/mib, after.Sys/mib, after.NumGC-before.NumGC)

	if count["request 200"] != burst || count["request 429"] != requests-burst {
		t.Errorf("token requests: %v; want %d answered 200 and %d 429", count, burst, requests-burst)
	}
	if count["login 401"]+count["login 429"] != logins || count["login 429"] == 0 {
		t.Errorf("log-ins: %v; want each 401 or 429, and some 429", count)
	}
	if grown > bound {
		t.Errorf("memory from the system grew by %d MiB, over the bound of %d MiB", grown/mib, bound/mib)
	}
	// The server is up, and a log-in passes once the burst is over.
	e.do(http.MethodGet, "/healthz").wantStatus(t, http.StatusOK)
	e.userToken(e.staff, acmeHost)
}
