package datasync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// personalFeed is a datasync feed (events, sales) whose entities carry
// the personal fields of a customer, not the customer itself. Its
// messages are stored with the customer's id as their entity, and
// forgetting the customer removes the personal fields from each of them
// (the rest of the message stays: the event or sale goes on existing,
// without the person), as a rebuild with the key gone would write them.
// The forgetting is not a change of the events or sales, so it adds no
// message to their datatargets.
type personalFeed interface {
	personalFields() []string
}

// forgetPersonal applies the CustomerForgotten events among events to the
// stored messages of the personal feeds' datatargets of the customers'
// companies.
func (p *Datasync) forgetPersonal(ctx context.Context, tx pgx.Tx, ts *syncTargets, events []eventstore.RecordedEvent) error {
	var forgotten []document.CustomerKey
	for _, e := range events {
		if e.Type != customer.TypeForgotten {
			continue
		}
		var f customer.Forgotten
		if err := bulk.Decode(e, &f); err != nil {
			return err
		}
		forgotten = append(forgotten, document.CustomerKey{Company: e.Metadata.CompanyID, ID: f.CustomerID})
	}
	if len(forgotten) == 0 {
		return nil
	}
	// In one order, so that the advisory locks are always taken in it.
	for _, dt := range slices.Sorted(maps.Keys(p.feeds)) {
		pf, ok := p.feeds[dt].(personalFeed)
		if !ok {
			continue
		}
		var forgets []forgetting
		for _, k := range forgotten {
			f := forgetting{entity: k.ID}
			for _, t := range ts.byCompany[k.Company] {
				if t.datatype == dt {
					f.targets = append(f.targets, t.id)
				}
			}
			if len(f.targets) > 0 {
				forgets = append(forgets, f)
			}
		}
		if err := rewriteStored(ctx, tx, "datasync_messages", forgets, withoutFields(pf.personalFields())); err != nil {
			return err
		}
	}
	return nil
}

// withoutFields rewrites a stored message without the fields in its data.
func withoutFields(fields []string) func(entity, updateID string, deleted bool, body []byte) ([]byte, error) {
	return func(_, updateID string, _ bool, body []byte) ([]byte, error) {
		var m syncMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("projections: datasync: message %s: %w", updateID, err)
		}
		for _, f := range fields {
			delete(m.Data, f)
		}
		return EncodeSyncMessage(m.UpdateID, m.Datatype, m.Data)
	}
}
