package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/access"
)

// TestLargeBodiesOneAtATime: a principal's second large body waits while
// its first is handled, and is handled once the first is done; another
// principal's large body and the same principal's small one do not wait.
func TestLargeBodiesOneAtATime(t *testing.T) {
	s := &Server{cfg: Config{ReadTimeout: time.Minute}, large: newLargeBodies(), uploadRoutes: map[string]bool{}}
	var entered atomic.Int32
	release := make(chan struct{})
	e := gin.New()
	e.POST("/x", func(c *gin.Context) {
		c.Set(keyPrincipal, access.Principal{CompanyID: "co", UserID: c.GetHeader("X-User")})
		c.Next()
	}, s.oneLargeBody, func(c *gin.Context) {
		entered.Add(1)
		if c.GetHeader("X-Hold") != "" {
			<-release
		}
		c.Status(http.StatusOK)
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	defer close(release) // before the server closes, should the test fail holding a body
	post := func(user string, size int, hold bool) <-chan int {
		done := make(chan int, 1)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/x", bytes.NewReader(make([]byte, size)))
		req.Header.Set("X-User", user)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
		return done
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	users := func(key string) int {
		s.large.mu.Lock()
		defer s.large.mu.Unlock()
		if tu := s.large.turns[key]; tu != nil {
			return tu.users
		}
		return 0
	}

	first := post("a", largeBody, true)
	waitFor("the first large body handled", func() bool { return entered.Load() == 1 })
	second := post("a", largeBody, true)
	// The second waits for its turn: without it, it would be handled.
	waitFor("the second large body waiting", func() bool { return users("co/users/a") == 2 || entered.Load() > 1 })
	if n := entered.Load(); n != 1 {
		t.Fatalf("%d large bodies of one principal handled at once", n)
	}
	if status := <-post("b", largeBody, false); status != http.StatusOK {
		t.Errorf("another principal's large body: %d", status)
	}
	if status := <-post("a", 1000, false); status != http.StatusOK {
		t.Errorf("the principal's small body: %d", status)
	}
	release <- struct{}{}
	if status := <-first; status != http.StatusOK {
		t.Errorf("first: %d", status)
	}
	waitFor("the second handled after the first", func() bool { return entered.Load() == 4 })
	release <- struct{}{}
	if status := <-second; status != http.StatusOK {
		t.Errorf("second: %d", status)
	}
	if n := users("co/users/a"); n != 0 || len(s.large.turns) != 0 {
		t.Errorf("%d turns left", len(s.large.turns))
	}
}
