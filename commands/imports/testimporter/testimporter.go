// Package testimporter is an Importer for tests of the import pipeline,
// one that needs no entity's rules.
package testimporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
)

// RecordedType is the type of the events the test Importer appends.
const RecordedType = "Recorded"

// Importer is a imports.Importer for tests. Each record is an object with
// an "id" (a string or a number); it becomes one RecordedType event, whose
// data is the record, on the stream Stream(company, id), in record order.
// A chunk's events are one commit. A record without an id, or with a "bad" field, is
// rejected (field "id" or "bad"); one with a "panic" field makes the
// Importer panic; the records the chunk's Reject names are rejected with
// its reason. The keys of an accepted record that begin with "unknown_"
// are its ignored fields: they count in the chunk's warnings. A record holding what the store cannot (a number jsonb
// cannot hold, such as 1e-16384) fails the chunk.
type Importer struct {
	// Kind is the entity imported. Default customers.
	Kind importing.Entity
	// Store appends the events in the chunk's transaction. Required when
	// a chunk has records to append; the PostgreSQL store needs no pool
	// for it (postgres.New(nil)).
	Store imports.TxAppender
	// Before, when set, is called first for every chunk; an error it
	// returns is the chunk's error.
	Before func(ctx context.Context, c imports.Chunk) error
}

var _ imports.Importer = (*Importer)(nil)

// Entity returns Kind.
func (i *Importer) Entity() importing.Entity {
	if i.Kind == "" {
		return importing.Customers
	}
	return i.Kind
}

// Stream is the stream of the record with id.
func Stream(companyID, id string) string { return domain.StreamID("rec", companyID, id) }

// ImportChunk appends one event per valid record.
func (i *Importer) ImportChunk(ctx context.Context, tx pgx.Tx, c imports.Chunk) (importing.Outcome, error) {
	if i.Before != nil {
		if err := i.Before(ctx, c); err != nil {
			return importing.Outcome{}, err
		}
	}
	commit := eventstore.Commit{Metadata: c.Metadata}
	streams := map[string]int{} // stream id: index in commit.Streams
	accepted := 0
	var rejections []importing.Rejection
	var warnings []importing.Warning
	for n, raw := range c.Records {
		index := c.FirstIndex + n
		if reason, ok := c.Reject[n]; ok {
			rejections = append(rejections, importing.Rejection{Index: index, Reason: reason})
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil {
			return importing.Outcome{}, fmt.Errorf("testimporter: record %d is not an object: %w", index, err)
		}
		id, ok := rec["id"]
		if _, p := rec["panic"]; p {
			panic(fmt.Sprintf("testimporter: record %d asks for a panic", index))
		}
		if _, bad := rec["bad"]; bad {
			rejections = append(rejections, importing.Rejection{Index: index, Reason: "records with a bad field are refused", Field: "bad"})
			continue
		}
		if !ok || id == "" {
			rejections = append(rejections, importing.Rejection{Index: index, Reason: "id is required", Field: "id"})
			continue
		}
		accepted++
		for _, k := range slices.Sorted(maps.Keys(rec)) {
			if !strings.HasPrefix(k, "unknown_") {
				continue
			}
			if w := slices.IndexFunc(warnings, func(w importing.Warning) bool { return w.Field == k }); w >= 0 {
				warnings[w].Count++
			} else {
				warnings = append(warnings, importing.Warning{Field: k, Count: 1, FirstIndex: index})
			}
		}
		stream := Stream(c.Company.ID, fmt.Sprint(id))
		if _, ok := streams[stream]; !ok {
			streams[stream] = len(commit.Streams)
			commit.Streams = append(commit.Streams, eventstore.StreamAppend{StreamID: stream, ExpectedVersion: eventstore.Any})
		}
		sa := &commit.Streams[streams[stream]]
		sa.Events = append(sa.Events, eventstore.Event{Type: RecordedType, Data: raw})
	}
	if len(commit.Streams) > 0 {
		if i.Store == nil {
			return importing.Outcome{}, errors.New("testimporter: no Store to append the chunk's events with")
		}
		if _, err := i.Store.AppendTx(ctx, tx, commit); err != nil {
			return importing.Outcome{}, err
		}
	}
	return importing.Outcome{Accepted: accepted, Rejections: rejections, Warnings: warnings}, nil
}
