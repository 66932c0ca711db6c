package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ReadyTimeout bounds the readiness check (app.Queries.Ready gets a context
// with this deadline): a database that does not answer a ping within it
// is not ready, and the probe answers 503 at once instead of hanging
// until the load balancer's own timeout. A healthy ping takes a
// millisecond; a pool that must connect first, a few.
const ReadyTimeout = 2 * time.Second

// handleHealthz serves GET /healthz: 200 whenever the process serves.
func (s *Server) handleHealthz(c *gin.Context) error {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
	return nil
}

// handleReadyz serves GET /readyz: 200 when app.Queries.Ready passes, else 503
// with the error body (the cause is logged, not shown). A ready node
// that has projections parked for some companies (app.Queries.Stalled) still
// serves every other company: it answers 200 with the status
// "degraded" and the number of parked companies by projection. The probe
// is unauthenticated, so it names neither companies nor errors.
func (s *Server) handleReadyz(c *gin.Context) error {
	ctx, cancel := context.WithTimeout(c.Request.Context(), ReadyTimeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return &notReadyError{err: err}
	}
	if s.stalled != nil {
		stalled, err := s.stalled(ctx)
		if err != nil {
			return &notReadyError{err: err}
		}
		if len(stalled) > 0 {
			c.JSON(http.StatusOK, gin.H{"status": "degraded", "stalled_companies": stalled})
			return nil
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
	return nil
}
