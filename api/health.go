package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// readyTimeout bounds the readiness check, so a stuck database answers
// "not ready" instead of hanging the probe.
const readyTimeout = 5 * time.Second

// handleHealthz serves GET /healthz: 200 whenever the process serves.
func (s *Server) handleHealthz(c *gin.Context) error {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
	return nil
}

// handleReadyz serves GET /readyz: 200 when Deps.Ready passes, else 503
// with the error body (the cause is logged, not shown).
func (s *Server) handleReadyz(c *gin.Context) error {
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return &notReadyError{err: err}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
	return nil
}
