package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/clientele/clientele/domain"
)

// decodeJSON decodes the one JSON value of r's body into v. An empty body
// leaves v as it is when optional, and is a 400 otherwise. Syntax and type
// errors are said in JSON's terms (domain.JSONDecodeError), never Go's;
// size errors are returned as they are, and errorResponse maps them.
func decodeJSON(r *http.Request, v any, optional bool) error {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			if optional {
				return nil
			}
			return domain.Errorf(domain.Invalid, "the request body is empty; send a JSON object")
		}
		return domain.JSONDecodeError(truncated(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return domain.JSONDecodeError(truncated(err))
		}
		return domain.Errorf(domain.Invalid, "the request body has more after its JSON value")
	}
	return nil
}

// truncated names a body that ends inside its JSON value. It is said
// here, where the reader is surely the body: a database connection that
// drops mid-reply fails with the same io.ErrUnexpectedEOF, and that is
// 503, not the client's 400.
func truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return domain.Errorf(domain.Invalid, "the request body ends before its JSON value does")
	}
	return err
}

// Timestamp layouts of answers: ISO 8601 in UTC with Z.
const (
	layoutSeconds = "2006-01-02T15:04:05Z"
	layoutMicros  = "2006-01-02T15:04:05.000000Z"
)

// Times are rounded to the microsecond first, as PostgreSQL stores them,
// so an answer made from a command's result and one read back from a read
// model agree.

// timestamp formats t to the second, as the interface's timestamps are.
func timestamp(t time.Time) string { return t.Round(time.Microsecond).UTC().Format(layoutSeconds) }

// timestampMicros formats t to the microsecond (integration created_at).
func timestampMicros(t time.Time) string {
	return t.Round(time.Microsecond).UTC().Format(layoutMicros)
}
