package datatarget

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/domain"
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
// fewer bytes). Every message must be a JSON object.
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
	var problems []domain.FieldError
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
	}
	if len(problems) > 0 {
		return nil, &domain.Error{Code: domain.Validation, Message: "every message must be a JSON object", Details: problems}
	}
	return out, nil
}
