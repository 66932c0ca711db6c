package api

import (
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// largeBody is the size from which a request body counts as large: a
// principal's large bodies are read and handled one at a time
// (oneLargeBody). Every request of the service's own clients is far
// smaller; uploads, which stream, are not counted.
const largeBody = 1 << 20

// largeBodies lets one large request body of each principal be read and
// handled at a time: a token that sends eight 10 MB bodies at once then
// holds one core and one body's memory, not eight, and the other
// companies' requests keep their pace (docs/benchmarks.md, "Floods of
// oversized requests"). A request waits for its turn for at most the
// time its body has to arrive (Config.ReadTimeout), then is 429.
type largeBodies struct {
	mu    sync.Mutex
	turns map[string]*turn
}

// turn is the one slot of a principal, and how many requests hold or
// wait for it (the entry is removed when none does).
type turn struct {
	slot  chan struct{}
	users int
}

func newLargeBodies() *largeBodies { return &largeBodies{turns: map[string]*turn{}} }

// isLarge reports whether r's body is large, or of a length not told.
func isLarge(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && (r.ContentLength < 0 || r.ContentLength >= largeBody)
}

// oneLargeBody makes a request with a large body wait for its
// principal's turn.
func (s *Server) oneLargeBody(c *gin.Context) {
	if !isLarge(c.Request) || s.uploadRoutes[c.FullPath()] {
		c.Next()
		return
	}
	p, _ := principalOf(c)
	key := p.CompanyID + "/" + p.Actor()
	g := s.large
	g.mu.Lock()
	t := g.turns[key]
	if t == nil {
		t = &turn{slot: make(chan struct{}, 1)}
		g.turns[key] = t
	}
	t.users++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if t.users--; t.users == 0 {
			delete(g.turns, key)
		}
		g.mu.Unlock()
	}()
	timer := time.NewTimer(s.cfg.ReadTimeout)
	defer timer.Stop()
	select {
	case t.slot <- struct{}{}:
	case <-timer.C:
		s.writeError(c, &rateLimitError{what: "large requests at once (one at a time for each token)", wait: time.Second})
		return
	case <-c.Request.Context().Done():
		s.writeError(c, c.Request.Context().Err())
		return
	}
	defer func() { <-t.slot }()
	c.Next()
}
