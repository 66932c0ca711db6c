package segments

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// writeFacts writes what the commit changes: the rules, the customers'
// documents, their events and sales. It returns the documents it wrote,
// by customer id, and the customers the commit deletes or forgets, with
// the cause.
func (m *Members) writeFacts(ctx context.Context, tx pgx.Tx, f *commitFacts, sales []saleFacts) (map[string]json.RawMessage, map[string]string, error) {
	type ruleRow struct {
		CompanyID string `json:"company_id"`
		Key       string `json:"segment_key"`
		Rule      string `json:"rule"`
		State     string `json:"state"`
	}
	var rules []ruleRow
	for _, s := range f.rules {
		rules = append(rules, ruleRow{CompanyID: f.company, Key: s.Key, Rule: string(s.Rule), State: string(s.State)})
	}
	docs, gone, err := m.foldCustomers(ctx, tx, f)
	if err != nil {
		return nil, nil, err
	}
	type docRow struct {
		CompanyID  string          `json:"company_id"`
		CustomerID string          `json:"customer_id"`
		Doc        json.RawMessage `json:"doc"`
	}
	var docRows []docRow
	for id, d := range docs {
		docRows = append(docRows, docRow{CompanyID: f.company, CustomerID: id, Doc: d})
	}
	goneIDs := make([]string, 0, len(gone))
	for id := range gone {
		goneIDs = append(goneIDs, id)
	}
	type activityRow struct {
		CompanyID  string         `json:"company_id"`
		EventID    int64          `json:"event_id"`
		CustomerID string         `json:"customer_id"`
		Type       string         `json:"type"`
		At         time.Time      `json:"at"`
		Fields     map[string]any `json:"fields"`
	}
	var acts []activityRow
	for _, r := range f.recorded {
		at, err := time.Parse(values.DateTimeLayout, r.Date)
		if err != nil {
			return nil, nil, fmt.Errorf("event %d: date %q: %w", r.ID, r.Date, err)
		}
		acts = append(acts, activityRow{CompanyID: f.company, EventID: r.ID, CustomerID: r.CustomerID, Type: r.Type, At: at,
			Fields: document.EventDoc(r, nil, false)})
	}
	type saleRow struct {
		CompanyID string `json:"company_id"`
		saleFacts
	}
	saleRows := make([]saleRow, len(sales))
	for i, s := range sales {
		saleRows[i] = saleRow{CompanyID: f.company, saleFacts: s}
	}

	var b pgx.Batch
	queue := func(sql string, rows any) error {
		switch rows := rows.(type) {
		case []ruleRow:
			return bulk.QueueRows(&b, "segment_members", sql, rows)
		case []docRow:
			return bulk.QueueRows(&b, "segment_members", sql, rows)
		case []activityRow:
			return bulk.QueueRows(&b, "segment_members", sql, rows)
		case []saleRow:
			return bulk.QueueRows(&b, "segment_members", sql, rows)
		}
		return nil
	}
	if err := queue(`INSERT INTO segment_rules (company_id, segment_key, rule, state)
		SELECT company_id, segment_key, rule, state FROM jsonb_to_recordset($1::jsonb)
			AS r(company_id text, segment_key text, rule text, state text)
		ON CONFLICT (company_id, segment_key) DO UPDATE SET rule = excluded.rule, state = excluded.state`, rules); err != nil {
		return nil, nil, err
	}
	if err := queue(`INSERT INTO segment_customers (company_id, customer_id, doc)
		SELECT company_id, customer_id, doc FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, customer_id text, doc jsonb)
		ON CONFLICT (company_id, customer_id) DO UPDATE SET doc = excluded.doc`, docRows); err != nil {
		return nil, nil, err
	}
	if len(goneIDs) > 0 {
		b.Queue(`DELETE FROM segment_customers WHERE company_id = $1 AND customer_id = ANY($2)`, f.company, goneIDs)
	}
	if err := queue(`INSERT INTO segment_activity (company_id, event_id, customer_id, type, at, fields)
		SELECT company_id, event_id, customer_id, type, at, fields FROM jsonb_to_recordset($1::jsonb)
			AS r(company_id text, event_id bigint, customer_id text, type text, at timestamptz, fields jsonb)
		ON CONFLICT (company_id, event_id) DO NOTHING`, acts); err != nil {
		return nil, nil, err
	}
	if len(f.deleted) > 0 {
		b.Queue(`DELETE FROM segment_activity WHERE company_id = $1 AND event_id = ANY($2)`, f.company, f.deleted)
	}
	if err := queue(`INSERT INTO segment_sales (company_id, sale_id, customer_id, at, revenue, products, counted)
		SELECT company_id, sale_id, customer_id, CASE WHEN has_at THEN at END, revenue, products, counted
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, sale_id text, customer_id text, at timestamptz,
			has_at boolean, revenue bigint, products text[], counted boolean)
		ON CONFLICT (company_id, sale_id) DO UPDATE SET customer_id = excluded.customer_id, at = excluded.at,
			revenue = excluded.revenue, products = excluded.products, counted = excluded.counted`, saleRows); err != nil {
		return nil, nil, err
	}
	if b.Len() > 0 {
		if err := bulk.SendBatch(ctx, tx, "segment_members", &b); err != nil {
			return nil, nil, err
		}
	}
	return docs, gone, nil
}

// foldCustomers folds each changed customer's stream up to the commit
// with the customers projector's own code: the document retrieval shows,
// by customer id, for those neither deleted nor forgotten; and the cause
// of the others.
func (m *Members) foldCustomers(ctx context.Context, tx pgx.Tx, f *commitFacts) (map[string]json.RawMessage, map[string]string, error) {
	if len(f.custUpto) == 0 {
		return nil, nil, nil
	}
	streams := make([]string, 0, len(f.custUpto))
	for s := range f.custUpto {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	upto := make([]int64, len(streams))
	ids := make([]string, len(streams))
	for i, s := range streams {
		upto[i], ids[i] = f.custUpto[s], f.custIDs[s]
	}
	history, err := m.log.ReadStreamsUpTo(ctx, tx, streams, upto)
	if err != nil {
		return nil, nil, fmt.Errorf("read customers: %w", err)
	}
	keys, err := document.LoadCustomerKeys(ctx, tx, m.keys, map[string][]string{f.company: ids})
	if err != nil {
		return nil, nil, err
	}
	docs, gone, names := map[string]json.RawMessage{}, map[string]string{}, map[string]json.RawMessage{}
	var r *document.CustomerRow
	var stream string
	dec := document.NewCustomerDecoder()
	done := func() {
		if r == nil {
			return
		}
		switch {
		case r.IsForgotten:
			gone[r.CustomerID] = CauseForgotten
		case r.IsDeleted:
			gone[r.CustomerID] = CauseDeleted
		default:
			docs[r.CustomerID] = r.AppendDoc(nil, names)
		}
	}
	for i := range history {
		e := &history[i]
		if r == nil || e.StreamID != stream {
			done()
			r, stream = document.NewCustomerRow(document.CustomerKey{Company: f.company, ID: f.custIDs[e.StreamID]}, e.RecordedAt), e.StreamID
		}
		k := document.CustomerKey{Company: f.company, ID: f.custIDs[e.StreamID]}
		ce := document.CustomerEvent{RecordedEvent: e, Key: k}
		if err := document.DecodeCustomerEvent(e.Data, &ce.Data); err != nil {
			return nil, nil, fmt.Errorf("decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
		}
		if err := r.ApplyEvent(ce, keys, dec); err != nil {
			return nil, nil, err
		}
	}
	done()
	return docs, gone, nil
}
