package commands

import (
	"context"
	"encoding/json"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// PostDatatargetMessages appends messages to a messages datatarget. Any
// principal of the company may post (a token's scopes permitting).
type PostDatatargetMessages struct {
	Principal    access.Principal
	DatatargetID string
	// Messages are JSON objects.
	Messages []json.RawMessage
}

// Posted is the result of a post: the number of its first message and how
// many it held; the others follow without a gap.
type Posted struct {
	FirstMessageNumber int64
	MessagesCount      int
}

// PostDatatargetMessagesHandler handles PostDatatargetMessages.
type PostDatatargetMessagesHandler struct {
	store eventstore.Store
}

// NewPostDatatargetMessagesHandler returns a handler on store.
func NewPostDatatargetMessagesHandler(store eventstore.Store) PostDatatargetMessagesHandler {
	if store == nil {
		panic("commands: NewPostDatatargetMessagesHandler: nil dependency")
	}
	return PostDatatargetMessagesHandler{store: store}
}

// Handle appends the messages as one commit: one event per message in the
// datatarget's messages stream, appended with no expected version. The
// store gives them the stream's next versions under the stream's row lock,
// which serialises the posters of this datatarget only; those versions are
// the message numbers, consecutive and unique however many clients post at
// once. The inline projection writes them into the queue in the same
// transaction, so a client retrieves its messages as soon as this returns.
func (h PostDatatargetMessagesHandler) Handle(ctx context.Context, cmd PostDatatargetMessages) (Posted, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return Posted{}, err
	}
	messages, err := datatarget.CheckMessages(cmd.Messages)
	if err != nil {
		return Posted{}, err
	}
	d, _, err := loadDatatarget(ctx, h.store, p.CompanyID, cmd.DatatargetID)
	if err != nil {
		return Posted{}, err
	}
	if d.Type != datatarget.Messages {
		return Posted{}, domain.Errorf(domain.Validation, "messages can be posted to messages datatargets only; this one is %s", d.Type)
	}
	events := make([]eventstore.Event, len(messages))
	for i, m := range messages {
		events[i] = eventstore.Event{Type: datatarget.MessagePostedType, Data: m}
	}
	c, err := h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.MessagesStream(p.CompanyID, d.ID), ExpectedVersion: eventstore.Any, Events: events,
		}},
	})
	if err != nil {
		return Posted{}, appendError(err)
	}
	return Posted{FirstMessageNumber: c.Events[0].StreamVersion, MessagesCount: len(c.Events)}, nil
}
