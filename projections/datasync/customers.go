package datasync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// customersFeed is the datasync feed of customers. It folds each changed
// customer's stream, up to the change, with the customers projector's own
// code (customerRow), so a message shows exactly what retrieval shows:
// sealed changes opened with the customer's data key, and a customer
// whose key is gone in the forgotten form, as the read model has it.
//
// Reading the stream costs one query per call for all the customers
// changed, and each customer's whole history: fine for customers, whose
// streams are short; a long-lived entity would want a snapshot table.
type customersFeed struct {
	keys crypto.KeyStore
}

func (customersFeed) eventTypes() []string {
	return []string{customer.TypeUpserted, customer.TypeDeleted, customer.TypeForgotten}
}

// alwaysSent: which customer changed, and whether it is gone.
func (customersFeed) alwaysSent() []string { return []string{"id", "is_deleted", "is_forgotten"} }

func (f customersFeed) states(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, changes []*eventstore.RecordedEvent) ([]entityState, error) {
	var streams []string
	var upto []int64
	index := map[string]int{}                  // stream -> its place in streams
	keyOf := map[string]document.CustomerKey{} // stream -> customer
	byCompany := map[string][]string{}
	at := make(map[int64]int, len(changes)) // global position -> change
	for i, e := range changes {
		var d customer.Deleted // every customer event starts with customer_id
		if err := bulk.Decode(*e, &d); err != nil {
			return nil, err
		}
		j, ok := index[e.StreamID]
		if !ok {
			j = len(streams)
			index[e.StreamID] = j
			streams, upto = append(streams, e.StreamID), append(upto, 0)
			keyOf[e.StreamID] = document.CustomerKey{Company: e.Metadata.CompanyID, ID: d.CustomerID}
			byCompany[e.Metadata.CompanyID] = append(byCompany[e.Metadata.CompanyID], d.CustomerID)
		}
		upto[j] = max(upto[j], e.StreamVersion)
		at[e.Position.Global] = i
	}
	history, err := log.ReadStreamsUpTo(ctx, tx, streams, upto)
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: customers: read streams: %w", err)
	}
	keys := map[document.CustomerKey][]byte{}
	for company, ids := range byCompany {
		got, err := f.keys.Load(ctx, tx, company, ids)
		if err != nil {
			return nil, fmt.Errorf("projections: datasync: customers: %w", err)
		}
		for id, k := range got {
			keys[document.CustomerKey{Company: company, ID: id}] = k
		}
	}

	out := make([]entityState, len(changes))
	filled := 0
	var r *document.CustomerRow
	dec := document.NewCustomerDecoder()
	for i := range history {
		e := &history[i]
		if r == nil || e.StreamID != history[i-1].StreamID {
			r = document.NewCustomerRow(keyOf[e.StreamID], e.RecordedAt)
		}
		ce := document.CustomerEvent{RecordedEvent: e, Key: keyOf[e.StreamID]}
		if err := document.DecodeCustomerEvent(e.Data, &ce.Data); err != nil {
			return nil, fmt.Errorf("projections: decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
		}
		if err := r.ApplyEvent(ce, keys, dec); err != nil {
			return nil, err
		}
		j, ok := at[e.Position.Global]
		if !ok {
			continue
		}
		out[j] = customerState(r, e.Type == customer.TypeForgotten)
		filled++
	}
	if filled != len(changes) {
		return nil, fmt.Errorf("projections: datasync: customers: %d of %d changes found in their streams", filled, len(changes))
	}
	return out, nil
}

// customerState takes the row's doc now: the row goes on changing as
// later events are applied (its map, not the values in it, which are
// never changed in place).
func customerState(r *document.CustomerRow, forgets bool) entityState {
	st := entityState{id: r.CustomerID, fields: make(map[string]json.RawMessage, len(r.Fields)+len(document.OwnedCustomerFields)+len(document.CustomerLists)), deleted: r.IsDeleted, forgets: forgets}
	for k, v := range r.Doc() {
		st.fields[k] = v
	}
	return st
}
