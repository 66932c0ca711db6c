package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
)

// errorBody is the body of every error answer.
type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    domain.Code         `json:"code"`
	Message string              `json:"message"`
	Details []domain.FieldError `json:"details,omitempty"`
}

// unavailableRetryAfter is the Retry-After, in seconds, of 503 answers: a
// database restart or failover takes seconds, and clients that retry at
// once only add to the load of the one coming back.
const unavailableRetryAfter = 5

// statusOf maps each error code to its HTTP status.
var statusOf = map[domain.Code]int{
	domain.Invalid:          http.StatusBadRequest,
	domain.Validation:       http.StatusUnprocessableEntity,
	domain.Unauthorized:     http.StatusUnauthorized,
	domain.Forbidden:        http.StatusForbidden,
	domain.NotFound:         http.StatusNotFound,
	domain.MethodNotAllowed: http.StatusMethodNotAllowed,
	domain.Conflict:         http.StatusConflict,
	domain.Gone:             http.StatusGone,
	domain.TooLarge:         http.StatusRequestEntityTooLarge,
	domain.RateLimited:      http.StatusTooManyRequests,
	domain.Unavailable:      http.StatusServiceUnavailable,
	domain.Internal:         http.StatusInternalServerError,
}

// notReadyError is the answer of GET /readyz while app.Queries.Ready fails.
type notReadyError struct{ err error }

func (e *notReadyError) Error() string { return "not ready: " + e.err.Error() }
func (e *notReadyError) Unwrap() error { return e.err }

// errorResponse is the one mapping of errors to an HTTP status and the
// error body: typed errors only. The layers below type what they know at
// their boundary with the database (the commands in typedStore and
// appendError: a version conflict is Conflict; the read models in
// readmodels/db.go; both through storeerr.Translate: text PostgreSQL cannot
// store is Invalid, a database that is away Unavailable), so nothing
// here knows the event store or PostgreSQL; the decoding of the request
// body and the edge's own refusals are typed by the standard library and
// here. Anything else is an internal error, whose text never reaches
// the client.
func errorResponse(err error) (int, errorBody) {
	var (
		de       *domain.Error
		tooLarge *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
		notReady *notReadyError
		limited  *rateLimitError
	)
	var e errorJSON
	switch {
	case errors.As(err, &de):
		e = errorJSON{Code: de.Code, Message: de.Message, Details: domain.CapDetails(de.Details, de.More)}
	case errors.As(err, &tooLarge):
		e = errorJSON{Code: domain.TooLarge, Message: fmt.Sprintf("the request body is over the limit of %d bytes", tooLarge.Limit)}
	case errors.As(err, &syntax), errors.As(err, &typ):
		// In JSON's terms, never Go's.
		return errorResponse(domain.JSONDecodeError(err))
	case errors.As(err, &limited):
		e = errorJSON{Code: domain.RateLimited, Message: limited.Error()}
	case errors.As(err, &notReady):
		e = errorJSON{Code: domain.Unavailable, Message: "the service is not ready"}
	default:
		e = errorJSON{Code: domain.Internal, Message: "internal error"}
	}
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return status, errorBody{Error: e}
}

// authChallenge is sent with every 401: an access token, or for
// POST /api/access-tokens/ a user's email and password.
const authChallenge = `Bearer realm="clientele", Basic realm="clientele"`

// writeError answers the request with err, unless an answer has begun.
// Only server-side (5xx) errors are logged, and only here.
func (s *Server) writeError(c *gin.Context, err error) {
	status, body := s.problem(c, err)
	if c.Writer.Written() {
		return
	}
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", authChallenge)
	}
	c.AbortWithStatusJSON(status, body)
}

// problem maps err to its answer (errorResponse), logs it when it is a
// server-side (5xx) error, records its code for the access log and sets
// the Retry-After header it calls for. Whoever answers in another form
// (writeError in JSON, the console in HTML) writes the body.
func (s *Server) problem(c *gin.Context, err error) (int, errorBody) {
	status, body := errorResponse(err)
	c.Set(keyErrorCode, string(body.Error.Code))
	if status >= http.StatusInternalServerError {
		level := slog.LevelError
		switch {
		case errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil:
			// The client went away; nothing is wrong on our side.
			level = slog.LevelInfo
		case body.Error.Code == domain.Unavailable:
			// Not a bug: the database is away (every request says so
			// while it is) or a check is not ready.
			level = slog.LevelWarn
		}
		s.log.LogAttrs(c.Request.Context(), level, "request failed",
			slog.String("method", c.Request.Method),
			slog.String("route", route(c)),
			slog.String("request_id", c.GetString(keyRequestID)),
			slog.Int("status", status),
			slog.String("err", err.Error()))
	}
	if c.Writer.Written() {
		return status, body
	}
	var limited *rateLimitError
	if errors.As(err, &limited) {
		c.Header("Retry-After", strconv.Itoa(limited.retryAfter()))
	}
	if body.Error.Code == domain.Unavailable {
		c.Header("Retry-After", strconv.Itoa(unavailableRetryAfter))
	}
	return status, body
}
