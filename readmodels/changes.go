package readmodels

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/storeerr"
)

// Changes reads a company's event log as a feed of changes, for
// auditors: in log order, each event with who caused it and its data,
// the personal data opened with the customers' data keys, none of a
// forgotten person's, and no credential.
type Changes struct {
	log  companyLog
	db   database
	keys crypto.KeyStore
}

// companyLog is what Changes reads of the event store.
type companyLog interface {
	ReadCompanyLog(ctx context.Context, companyID string, after, upTo eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
	Head(ctx context.Context) (eventstore.Position, error)
}

// NewChanges returns the query on the event store; db holds the
// customers' data keys.
func NewChanges(store eventstore.Store, db crypto.Querier, keys crypto.KeyStore) *Changes {
	if store == nil || db == nil || keys.Keyring == nil {
		panic("readmodels: NewChanges: nil dependency")
	}
	return &Changes{log: store, db: database{db}, keys: keys}
}

// ChangesQuery selects changes of one company.
type ChangesQuery struct {
	CompanyID string
	// After is the position the changes come after (zero: the start).
	After eventstore.Position
	// Since and Until bound the commit times, both included; zero is no
	// bound.
	Since, Until time.Time
	// Types keeps the events of these types; none keeps all.
	Types []string
	// Stream keeps the events of this stream; "" keeps all.
	Stream string
	// Limit is the most changes to read; 0 reads them all, up to the
	// log's head when the read began.
	Limit int
}

// Change is one event of the log as the feed shows it.
type Change struct {
	Position    eventstore.Position
	CommittedAt time.Time
	Stream      string
	Type        string
	Actor       string
	Source      string
	RunID       string
	// Data is the event's data with its sealed personal data opened
	// (under "opened", in place of "sealed") and its credentials
	// redacted; nil for the events of a forgotten customer, whose data
	// key is gone.
	Data json.RawMessage
}

// changesPage is how many events a read of the log asks for: memory is
// bounded by it (and a commit), whatever the number of changes, times
// the pages in flight (changesAhead, the one read ahead and the one
// written).
const changesPage = 2000

// changesAhead is how many pages are read ahead of the one being written.
const changesAhead = 1

// changesBatch is a page of the log with what opening it needs: each
// event's customer ("" for none) and the customers' data keys.
type changesBatch struct {
	events    []eventstore.RecordedEvent
	customers []string
	keys      map[string][]byte
	err       error
}

// Each hands each the changes q selects, in log order, reading the log a
// page at a time. It returns the position to resume from (q.After of the
// next call), and more: true when it stopped at q.Limit.
//
// The next page, and its customers' keys, are read while the current
// one is opened and written: the two waits on the database overlap the
// work, and the feed goes as fast as the slower of the two.
func (c *Changes) Each(ctx context.Context, q ChangesQuery, each func(Change) error) (next eventstore.Position, more bool, err error) {
	next = q.After
	head, err := c.log.Head(ctx)
	if err != nil {
		return next, false, fmt.Errorf("readmodels: changes: %w", storeerr.Translate(err))
	}
	ctx, cancel := context.WithCancel(ctx)
	batches := make(chan changesBatch, changesAhead)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		c.readAhead(ctx, q.CompanyID, next, head, batches)
	}()
	defer func() {
		cancel()
		for range batches { // let the reader end
		}
		<-done
	}()
	n := 0
	for b := range batches {
		if b.err != nil {
			return next, false, b.err
		}
		for i, e := range b.events {
			next = e.Position
			if !q.selects(e) {
				continue
			}
			ch := Change{Position: e.Position, CommittedAt: e.RecordedAt.UTC(), Stream: e.StreamID, Type: e.Type,
				Actor: e.Metadata.Actor, Source: e.Metadata.Source, RunID: e.Metadata.RunID}
			if ch.Data, err = openChange(e, b.customers[i], b.keys); err != nil {
				return next, false, err
			}
			if err := each(ch); err != nil {
				return next, false, err
			}
			if n++; q.Limit > 0 && n == q.Limit {
				return next, next.Less(head), nil
			}
		}
	}
	return next, false, nil
}

// readAhead sends the company's log from after up to head, page by page,
// each with its customers' keys, until the range ends, a read fails (the
// batch that says so is the last) or ctx is done.
func (c *Changes) readAhead(ctx context.Context, companyID string, after, head eventstore.Position, out chan<- changesBatch) {
	for after.Less(head) {
		var b changesBatch
		b.events, b.err = c.log.ReadCompanyLog(ctx, companyID, after, head, changesPage)
		if b.err != nil {
			b.err = fmt.Errorf("readmodels: changes: %w", storeerr.Translate(b.err))
		} else if len(b.events) == 0 {
			return
		} else {
			b.customers = make([]string, len(b.events))
			for i, e := range b.events {
				b.customers[i] = customerOf(e.Data)
			}
			b.keys, b.err = c.customerKeys(ctx, companyID, b.customers)
		}
		select {
		case out <- b:
		case <-ctx.Done():
			return
		}
		if b.err != nil || len(b.events) < changesPage {
			return // failed, or the range ended
		}
		after = b.events[len(b.events)-1].Position
	}
}

// selects reports whether the query keeps e.
func (q ChangesQuery) selects(e eventstore.RecordedEvent) bool {
	return (q.Stream == "" || e.StreamID == q.Stream) &&
		(len(q.Types) == 0 || slices.Contains(q.Types, e.Type)) &&
		(q.Since.IsZero() || !e.RecordedAt.Before(q.Since)) &&
		(q.Until.IsZero() || !e.RecordedAt.After(q.Until))
}

// customerKeys loads the data keys of the customers (customer, activity
// and sale events carry a customer_id; "" for an event without one), in
// one query.
func (c *Changes) customerKeys(ctx context.Context, companyID string, customers []string) (map[string][]byte, error) {
	seen := make(map[string]bool, len(customers))
	var ids []string
	for _, id := range customers {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	keys, err := c.keys.Load(ctx, c.db, companyID, ids)
	if err != nil {
		return nil, fmt.Errorf("readmodels: changes: %w", err)
	}
	return keys, nil
}

// customerOf is the customer an event's data names, "" when none.
func customerOf(data []byte) string {
	v := gjson.GetBytes(data, "customer_id")
	if v.Type != gjson.String {
		return ""
	}
	return v.String()
}

// redactedValue stands for a credential in the feed.
const redactedValue = `"[redacted]"`

// openChange returns the data of e, which names the customer id (""
// for none), as the feed shows it: nil when it names a customer whose
// key is gone (forgotten), its sealed part opened
// under "opened", its credentials (access.CredentialFields) redacted.
// It walks the data's members once, copying them as stored (data from
// jsonb is valid JSON): the feed streams a million changes, and decoding
// each into a map to encode it again cost most of its time.
func openChange(e eventstore.RecordedEvent, id string, keys map[string][]byte) (json.RawMessage, error) {
	doc := gjson.ParseBytes(e.Data)
	if !doc.IsObject() {
		return e.Data, nil
	}
	var key []byte
	if id != "" {
		if key = keys[id]; key == nil {
			return nil, nil
		}
	}
	out := make([]byte, 0, len(e.Data)+64)
	out = append(out, '{')
	var err error
	forgotten := false
	doc.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if len(out) > 1 {
			out = append(out, ',')
		}
		switch {
		case name == "sealed" && key != nil && v.Type == gjson.String:
			var box []byte
			if box, err = base64.StdEncoding.DecodeString(v.Str); err != nil {
				return false
			}
			plain, openErr := crypto.Open(key, box, []byte(id))
			if errors.Is(openErr, crypto.ErrDecrypt) {
				forgotten = true // sealed with a key destroyed before this one
				return false
			}
			if err = openErr; err != nil {
				return false
			}
			out = append(out, `"opened":`...)
			out = append(out, plain...)
		case slices.Contains(access.CredentialFields, name):
			out = append(out, k.Raw...)
			out = append(out, ':')
			out = append(out, redactedValue...)
		default:
			out = append(out, k.Raw...)
			out = append(out, ':')
			out = append(out, v.Raw...)
		}
		return true
	})
	if forgotten {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("readmodels: changes: open %s/%d: %w", e.StreamID, e.StreamVersion, err)
	}
	return append(out, '}'), nil
}

// ParsePosition reads a position of a change as Position.String writes
// it (tx:global); ok is false when s is not one.
func ParsePosition(s string) (p eventstore.Position, ok bool) {
	tx, global, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return eventstore.Position{}, false
	}
	t, err1 := strconv.ParseUint(tx, 10, 64)
	g, err2 := strconv.ParseInt(global, 10, 64)
	if err1 != nil || err2 != nil || g < 0 {
		return eventstore.Position{}, false
	}
	return eventstore.Position{TxID: t, Global: g}, true
}
