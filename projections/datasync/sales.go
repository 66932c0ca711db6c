package datasync

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/document"
)

// salesFeed is the datasync feed of sales: each SaleUpserted is one
// change. It folds each changed sale's stream, up to the change, with
// the sales projector's own code (saleRow.applyUpsert), personal fields
// opened with the customer's key as it is now, so a message shows exactly
// what retrieval shows. A message always carries sale_external_id (the
// sale's identity to clients; retrieval shows no other id) and
// sale_is_deleted.
//
// Its messages are about the sale's customer (datasync_messages.entity_id
// is the customer's id after the change): forgetting the customer removes
// the personal fields from them (personalFeed).
//
// Like the catalog feeds it reads each changed sale's whole stream per
// call, in one query: sales streams are short (a transaction changes a
// few times).
type salesFeed struct {
	keys crypto.KeyStore
}

func (salesFeed) eventTypes() []string { return []string{sale.TypeUpserted} }

func (salesFeed) alwaysSent() []string {
	return []string{document.SaleFieldExternalID, document.SaleFieldIsDeleted}
}

func (salesFeed) personalFields() []string { return sale.Personal }

func (f salesFeed) states(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, changes []*eventstore.RecordedEvent) ([]entityState, error) {
	history, at, err := readChangedStreams(ctx, tx, log, changes)
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: sales: %w", err)
	}
	ups := make([]sale.Upserted, len(history))
	needKeys := map[document.CustomerKey]bool{}
	byCompany := map[string][]string{}
	for i, e := range history {
		if e.Type != sale.TypeUpserted {
			continue
		}
		if err := document.DecodeNumbersEvent(e, &ups[i]); err != nil {
			return nil, err
		}
		company := e.Metadata.CompanyID
		if ck := (document.CustomerKey{Company: company, ID: ups[i].CustomerID}); len(ups[i].Sealed) > 0 && !needKeys[ck] {
			needKeys[ck] = true
			byCompany[company] = append(byCompany[company], ck.ID)
		}
	}
	keys, err := document.LoadCustomerKeys(ctx, tx, f.keys, byCompany)
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: sales: %w", err)
	}

	out := make([]entityState, len(changes))
	filled := 0
	var r *document.SaleRow
	for i := range history {
		e := &history[i]
		if r == nil || e.StreamID != history[i-1].StreamID {
			r = document.NewSaleRow(document.CatalogKey{Company: e.Metadata.CompanyID, ID: ups[i].SaleID}, e.RecordedAt)
		}
		if e.Type != sale.TypeUpserted || !r.Advance(e) {
			continue
		}
		if _, err := r.ApplyUpsert(e, ups[i], keys); err != nil {
			return nil, err
		}
		j, ok := at[e.Position.Global]
		if !ok {
			continue
		}
		st := entityState{id: r.CustomerID, deleted: r.Deleted()}
		if st.fields, err = encodeFields(r.Doc); err != nil {
			return nil, fmt.Errorf("projections: datasync: sale %s: %w", r.SaleID, err)
		}
		out[j] = st
		filled++
	}
	if filled != len(changes) {
		return nil, fmt.Errorf("projections: datasync: sales: %d of %d changes found in their streams", filled, len(changes))
	}
	return out, nil
}
