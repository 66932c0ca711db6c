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
	EachCompanyEvent(ctx context.Context, companyID string, after, upTo eventstore.Position, fn func(eventstore.RecordedEvent) error) error
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

// changesBatch is how many events of the log the feed holds at a time,
// to load the keys of their customers in one query: memory is bounded by
// it (and the key cache), whatever the number of changes.
const changesBatch = 1000

// errLimitReached stops the read of the log at the query's limit.
var errLimitReached = errors.New("readmodels: changes: the limit is reached")

// Each hands each the changes q selects, in log order, reading the log
// as one stream (eventstore.CommitReader.EachCompanyEvent) up to its head
// when the read began. It returns the position to resume from (q.After
// of the next call), and more: true when it stopped at q.Limit.
func (c *Changes) Each(ctx context.Context, q ChangesQuery, each func(Change) error) (next eventstore.Position, more bool, err error) {
	next = q.After
	head, err := c.log.Head(ctx)
	if err != nil {
		return next, false, fmt.Errorf("readmodels: changes: %w", storeerr.Translate(err))
	}
	// The keys of the customers met, kept for the whole read: every
	// change it hands out was committed before it began, so a customer
	// forgotten while it runs is shown as it was then.
	keys := crypto.KeyStore{Keyring: c.keys.Keyring, Cache: crypto.NewKeyCache(changesKeyCache)}
	r := changesReader{c: c, q: q, each: each, next: q.After, keys: keys}
	err = c.log.EachCompanyEvent(ctx, q.CompanyID, q.After, head, func(e eventstore.RecordedEvent) error {
		if r.batch = append(r.batch, e); len(r.batch) == changesBatch {
			return r.flush(ctx)
		}
		return nil
	})
	if err == nil {
		err = r.flush(ctx)
	}
	switch {
	case errors.Is(err, errLimitReached):
		return r.next, r.next.Less(head), nil
	case r.failed:
		return r.next, false, err
	case err != nil:
		return r.next, false, fmt.Errorf("readmodels: changes: %w", storeerr.Translate(err))
	}
	return r.next, false, nil
}

// changesReader is the state of one read of Each: the events read and
// not handed out yet, and the keys of the customers met.
type changesReader struct {
	c    *Changes
	q    ChangesQuery
	each func(Change) error
	// next is the position of the last event handed out or passed over.
	next  eventstore.Position
	n     int
	batch []eventstore.RecordedEvent
	// customers[i] is batch[i]'s customer ("" for none).
	customers []string
	// keys loads the customers' keys through a cache of those met.
	keys crypto.KeyStore
	// failed is set when the error is each's or the keys', said already.
	failed bool
}

// flush hands out the changes of the batch, after loading the keys of
// its customers (one query for those not met yet, none when all were).
func (r *changesReader) flush(ctx context.Context) error {
	defer func() { r.batch = r.batch[:0] }()
	// Each event's customer, found once: the keys and the opening both
	// need it.
	r.customers = r.customers[:0]
	var ids []string
	for _, e := range r.batch {
		id := customerOf(e.Data)
		r.customers = append(r.customers, id)
		if id != "" {
			ids = append(ids, id)
		}
	}
	keys, err := r.keys.Load(ctx, r.c.db, r.q.CompanyID, ids)
	if err != nil {
		r.failed = true
		return fmt.Errorf("readmodels: changes: %w", err)
	}
	for i, e := range r.batch {
		r.next = e.Position
		if !r.q.selects(e) {
			continue
		}
		ch := Change{Position: e.Position, CommittedAt: e.RecordedAt.UTC(), Stream: e.StreamID, Type: e.Type,
			Actor: e.Metadata.Actor, Source: e.Metadata.Source, RunID: e.Metadata.RunID}
		if ch.Data, err = openChange(e, r.customers[i], keys); err != nil {
			r.failed = true
			return err
		}
		if err := r.each(ch); err != nil {
			r.failed = true
			return err
		}
		if r.n++; r.q.Limit > 0 && r.n == r.q.Limit {
			return errLimitReached
		}
	}
	return nil
}

// changesKeyCache bounds the keys a read of the feed keeps: two
// generations of this many customers each (crypto.KeyCache).
const changesKeyCache = 10_000

// selects reports whether the query keeps e.
func (q ChangesQuery) selects(e eventstore.RecordedEvent) bool {
	return (q.Stream == "" || e.StreamID == q.Stream) &&
		(len(q.Types) == 0 || slices.Contains(q.Types, e.Type)) &&
		(q.Since.IsZero() || !e.RecordedAt.Before(q.Since)) &&
		(q.Until.IsZero() || !e.RecordedAt.After(q.Until))
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
