package datatarget

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/values"
)

// MaxPostMessages is the most messages one post may carry: a post is one
// commit, and commits are kept to import-chunk sizes so that the append
// transaction stays short.
const MaxPostMessages = 10_000

// Retrieval page sizes: the interface's default, and our maximum (as for
// the data retrieval endpoints).
const (
	DefaultRetrieveLimit = 100
	MaxRetrieveLimit     = 10_000
)

// CheckMessages validates the messages of one post and returns them
// compacted (insignificant whitespace removed: the queue stores and sends
// fewer bytes). Every message must be a JSON object (else 422), and hold
// only values the queue's jsonb can store (values.Storable): a message
// that PostgreSQL refuses is the client's malformed request (400), never
// our 500, and one that would be stored changed (a lone surrogate escape)
// is refused rather than altered.
func CheckMessages(messages []json.RawMessage) ([]json.RawMessage, error) {
	switch {
	case len(messages) == 0:
		return nil, &domain.Error{Code: domain.Validation, Message: "messages must hold at least one message",
			Details: []domain.FieldError{{Field: "messages", Reason: "empty"}}}
	case len(messages) > MaxPostMessages:
		return nil, &domain.Error{Code: domain.Validation, Message: fmt.Sprintf("at most %d messages may be posted at once", MaxPostMessages),
			Details: []domain.FieldError{{Field: "messages", Reason: "too many"}}}
	}
	out := make([]json.RawMessage, len(messages))
	// One buffer for all: the compacted messages are slices of it.
	total := 0
	for _, m := range messages {
		total += len(m)
	}
	buf := bytes.NewBuffer(make([]byte, 0, total))
	var problems, unstorable []domain.FieldError
	for i, m := range messages {
		start := buf.Len()
		if err := json.Compact(buf, m); err != nil || buf.Len() == start || buf.Bytes()[start] != '{' {
			if len(problems) < 10 {
				problems = append(problems, domain.FieldError{Field: fmt.Sprintf("messages[%d]", i), Reason: "must be a JSON object"})
			}
			buf.Truncate(start)
			continue
		}
		out[i] = buf.Bytes()[start:buf.Len():buf.Len()]
		if field, reason := values.Storable(out[i]); reason != "" && len(unstorable) < 10 {
			name := fmt.Sprintf("messages[%d]", i)
			if field != "" {
				name += "." + field
			}
			unstorable = append(unstorable, domain.FieldError{Field: name, Reason: reason})
		}
	}
	if len(unstorable) > 0 {
		return nil, &domain.Error{Code: domain.Invalid, Message: "a message holds a value that cannot be stored: " + unstorable[0].Field + " " + unstorable[0].Reason, Details: unstorable}
	}
	if len(problems) > 0 {
		return nil, &domain.Error{Code: domain.Validation, Message: "every message must be a JSON object", Details: problems}
	}
	return out, nil
}
