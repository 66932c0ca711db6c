package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
)

// Keys of the values the middleware leaves in the gin context.
const (
	keyRoute     = "clientele.route"
	keyRequestID = "clientele.request_id"
	keyCompany   = "clientele.company"
	keyPrincipal = "clientele.principal"
	keyErrorCode = "clientele.error_code"
)

// headerRequestID carries the request id in both directions.
const headerRequestID = "X-Request-Id"

// routeName records the canonical route of a handler chain, so that logs
// and metrics name one route whichever spelling of its path was used.
func routeName(route string) gin.HandlerFunc {
	return func(c *gin.Context) { c.Set(keyRoute, route) }
}

// route is the canonical route of the request, "unmatched" for 404s and
// 405s.
func route(c *gin.Context) string {
	if r := c.GetString(keyRoute); r != "" {
		return r
	}
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// requestID honours a sane X-Request-Id from the client, or makes one, and
// echoes it in the response.
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader(headerRequestID)
	if !validRequestID(id) {
		id = uuid.NewString()
	}
	c.Set(keyRequestID, id)
	c.Header(headerRequestID, id)
	c.Next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	return true
}

// observe writes the access log line and the metrics of each request once
// it is answered. It logs the path without its query, which may carry an
// access token.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	elapsed := time.Since(start)
	status := c.Writer.Status()
	rt := route(c)
	s.metrics.observe(c.Request.Method, rt, status, elapsed)

	attrs := []slog.Attr{
		slog.String("method", c.Request.Method),
		slog.String("path", c.Request.URL.Path),
		slog.String("route", rt),
		slog.Int("status", status),
		slog.Duration("duration", elapsed),
		slog.Int("bytes", c.Writer.Size()),
		slog.String("request_id", c.GetString(keyRequestID)),
		slog.String("client_ip", c.ClientIP()),
	}
	if co, ok := companyOf(c); ok {
		attrs = append(attrs, slog.String("company", co.ID))
	}
	if p, ok := principalOf(c); ok {
		attrs = append(attrs, slog.String("actor", p.Actor()))
	}
	if code := c.GetString(keyErrorCode); code != "" {
		attrs = append(attrs, slog.String("error_code", code))
	}
	s.log.LogAttrs(c.Request.Context(), slog.LevelInfo, "http request", attrs...)
}

// recoverer turns a panic in a handler into the 500 error body and logs
// it with its stack.
func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler { // net/http's way to abort a response: let it through
			panic(v)
		}
		s.writeError(c, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		c.Abort()
	}()
	c.Next()
}

// limitBody refuses a body over Config.MaxBodyBytes (MaxUploadBytes for
// upload routes): at once when its length is declared, and when a handler
// reads past the limit otherwise.
func (s *Server) limitBody(c *gin.Context) {
	max := s.cfg.MaxBodyBytes
	if s.uploadRoutes[c.FullPath()] {
		max = s.cfg.MaxUploadBytes
	}
	if c.Request.ContentLength > max {
		s.writeError(c, &http.MaxBytesError{Limit: max})
		c.Abort()
		return
	}
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max)
	}
	c.Next()
}

// handleNoRoute answers a path that no route serves.
func (s *Server) handleNoRoute(c *gin.Context) error {
	if m := uploadPath.FindStringSubmatch(c.Request.URL.Path); m != nil && c.Request.Method == http.MethodPost {
		// An upload of an entity we do not import is a whole-request
		// problem (decisions: "unknown entity" is a 400), not a missing page.
		return domain.Errorf(domain.Invalid, "unknown entity %q: no such import", m[1])
	}
	return domain.Errorf(domain.NotFound, "no such path: %s", c.Request.URL.Path)
}

// uploadPath matches the path of an upload of any entity.
var uploadPath = regexp.MustCompile(`^(?:/api)?/([A-Za-z0-9_-]+)/upload/?$`)

// handleNoMethod answers a served path asked with a method it does not
// take; gin has set the Allow header.
func (s *Server) handleNoMethod(c *gin.Context) error {
	return domain.Errorf(domain.MethodNotAllowed, "%s is not allowed on %s; allowed: %s",
		c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow"))
}

// commandContext is the context for a command: the request's, marked with
// the source "api" and the request id as correlation id of the events.
func commandContext(c *gin.Context) context.Context {
	return commands.WithRequest(c.Request.Context(), "api", c.GetString(keyRequestID))
}

// checkInput refuses a path or query that PostgreSQL could not compare:
// invalid UTF-8 or the character U+0000 (a %00 or %ff in the URL). They are
// the client's mistake, answered 400 before any query is built on them.
func (s *Server) checkInput(c *gin.Context) {
	bad := func(v string) bool { return !utf8.ValidString(v) || strings.ContainsRune(v, 0) }
	fail := bad(c.Request.URL.Path)
	for k, vs := range c.Request.URL.Query() {
		fail = fail || bad(k) || slices.ContainsFunc(vs, bad)
	}
	if fail {
		s.writeError(c, domain.Errorf(domain.Invalid, "the path or query is not valid UTF-8 or contains the character U+0000"))
		c.Abort()
		return
	}
	c.Next()
}
