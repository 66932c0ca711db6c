package datasync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// eventsFeed is the datasync feed of events: each EventRecorded and each
// EventDeleted is one change, the event shown with the events projector's
// own code (eventDoc), personal fields opened with the customer's key as
// it is now (none once the customer is forgotten). A deleted event is its
// recorded document with "is_deleted": true. A message always carries id
// and is_deleted.
//
// Its messages are about the event's customer (datasync_messages.
// entity_id is the customer's id): forgetting the customer removes the
// personal fields from them (personalFeed).
type eventsFeed struct {
	keys crypto.KeyStore
}

func (eventsFeed) eventTypes() []string { return []string{activity.TypeRecorded, activity.TypeDeleted} }

func (eventsFeed) alwaysSent() []string { return []string{"id", "is_deleted"} }

func (eventsFeed) personalFields() []string { return activity.Personal }

func (f eventsFeed) states(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, changes []*eventstore.RecordedEvent) ([]entityState, error) {
	type item struct {
		key     document.ActivityKey
		deleted bool
	}
	items := make([]item, len(changes))
	recs := map[document.ActivityKey]*activity.Recorded{}
	var lookCompanies []string // deleted events recorded before this call: found in the log
	var lookIDs []int64
	asked := map[document.ActivityKey]bool{}
	for i, e := range changes {
		company := e.Metadata.CompanyID
		switch e.Type {
		case activity.TypeRecorded:
			var rec activity.Recorded
			if err := document.DecodeNumbersEvent(*e, &rec); err != nil {
				return nil, err
			}
			items[i].key = document.ActivityKey{Company: company, ID: rec.ID}
			recs[items[i].key] = &rec
		case activity.TypeDeleted:
			var d activity.Deleted
			if err := bulk.Decode(*e, &d); err != nil {
				return nil, err
			}
			k := document.ActivityKey{Company: company, ID: d.ID}
			items[i] = item{key: k, deleted: true}
			if recs[k] == nil && !asked[k] {
				asked[k] = true
				lookCompanies, lookIDs = append(lookCompanies, company), append(lookIDs, d.ID)
			}
		}
	}
	if err := recordedInLog(ctx, tx, log, lookCompanies, lookIDs, recs); err != nil {
		return nil, err
	}
	needKeys := map[document.CustomerKey]bool{}
	byCompany := map[string][]string{}
	for k, rec := range recs {
		if ck := (document.CustomerKey{Company: k.Company, ID: rec.CustomerID}); len(rec.Sealed) > 0 && !needKeys[ck] {
			needKeys[ck] = true
			byCompany[k.Company] = append(byCompany[k.Company], ck.ID)
		}
	}
	keys, err := document.LoadCustomerKeys(ctx, tx, f.keys, byCompany)
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: events: %w", err)
	}

	out := make([]entityState, len(changes))
	for i, it := range items {
		rec := recs[it.key]
		if rec == nil {
			// Deleted, never recorded (the write side does not do that):
			// all there is to say.
			out[i] = entityState{fields: map[string]json.RawMessage{
				"id": json.RawMessage(fmt.Sprint(it.key.ID)), "is_deleted": json.RawMessage("true")}, deleted: true}
			continue
		}
		var personal map[string]any
		if len(rec.Sealed) > 0 {
			if personal, _, err = document.OpenPersonal(keys, document.CustomerKey{Company: it.key.Company, ID: rec.CustomerID}, rec.Sealed, activity.Personal); err != nil {
				return nil, fmt.Errorf("projections: datasync: events: open %d: %w", rec.ID, err)
			}
		}
		st := entityState{id: rec.CustomerID, deleted: it.deleted}
		if st.fields, err = encodeFields(document.EventDoc(*rec, personal, it.deleted)); err != nil {
			return nil, fmt.Errorf("projections: datasync: event %d: %w", rec.ID, err)
		}
		out[i] = st
	}
	return out, nil
}

// recordedInLog adds to recs the EventRecorded of each company's id, read
// from the log (EventLog.EachEventRecorded: one query in PostgreSQL, a
// walk of the whole log in EventStoreDB).
func recordedInLog(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, companies []string, ids []int64, recs map[document.ActivityKey]*activity.Recorded) error {
	if len(ids) == 0 {
		return nil
	}
	err := log.EachEventRecorded(ctx, tx, companies, ids, func(company string, data []byte) error {
		var rec activity.Recorded
		if err := document.DecodeNumbers(data, &rec); err != nil {
			return err
		}
		recs[document.ActivityKey{Company: company, ID: rec.ID}] = &rec
		return nil
	})
	if err != nil {
		return fmt.Errorf("projections: datasync: events: read recorded: %w", err)
	}
	return nil
}

// encodeFields encodes each field of a document.
func encodeFields(doc map[string]any) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(doc))
	for k, v := range doc {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		out[k] = b
	}
	return out, nil
}
