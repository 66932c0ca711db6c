package campaignstats

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// statsSaleChange is a SaleUpserted of the batch.
type statsSaleChange struct {
	e    *eventstore.RecordedEvent
	data sale.Upserted
}

// statsSaleFields are the transaction fields the figures read; the rest
// of a sale is not kept.
var statsSaleFields = []string{document.SaleFieldState, document.SaleFieldDate, document.SaleFieldIsDeleted, document.SaleFieldTotal, document.SaleFieldDiscount}

// statsRowFields are the row fields the figures (and the fold's derived
// sale_total) read. A row is always replaced whole (by its key), so the
// others need not be kept: every commit of sales writes less.
var statsRowFields = []string{"product_id", "quantity", document.RowFieldTotal, "discount", "tags", document.RowFieldIsDeleted}

// statsSales is the table of the sales the figures read, which keeps no
// created_at.
var statsSales = document.SaleTable{Name: "campaign_stats_sales"}

// statsSaleRow is a campaign_stats_sales row.
type statsSaleRow struct {
	CompanyID  string             `json:"company_id"`
	SaleID     string             `json:"sale_id"`
	CustomerID string             `json:"customer_id"`
	Doc        map[string]any     `json:"doc"`
	KeyedRows  []sale.Row         `json:"keyed_rows"`
	TotalGiven bool               `json:"total_given"`
	Version    int64              `json:"version"`
	Counted    bool               `json:"counted"`
	SaleDate   *time.Time         `json:"sale_date"`
	Revenue    int64              `json:"revenue"`
	StatRows   []campaign.SaleRow `json:"stat_rows"`
}

// writeStatsSales folds the batch's sales into campaign_stats_sales with
// the sales read model's own fold (saleRow.apply, without personal
// fields), and touches the members of the customers whose sales changed
// (a sale's former customer too), each with the time of the last change.
func writeStatsSales(ctx context.Context, tx pgx.Tx, changes []statsSaleChange, touched func(memberKey, time.Time)) error {
	if len(changes) == 0 {
		return nil
	}
	var order []document.CatalogKey
	seen := map[document.CatalogKey]bool{}
	for _, c := range changes {
		k := document.CatalogKey{Company: c.e.Metadata.CompanyID, ID: c.data.SaleID}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	rows, err := document.LoadSaleRows(ctx, tx, statsSales, order, nil)
	if err != nil {
		return err
	}
	customers := map[document.CustomerKey]time.Time{}
	touch := func(k document.CustomerKey, at time.Time) {
		if k.ID != "" && at.After(customers[k]) {
			customers[k] = at
		}
	}
	for _, c := range changes {
		r := rows[document.CatalogKey{Company: c.e.Metadata.CompanyID, ID: c.data.SaleID}]
		if !r.Advance(c.e) {
			continue
		}
		touch(document.CustomerKey{Company: r.CompanyID, ID: r.CustomerID}, c.e.RecordedAt)
		r.Apply(c.data, nil, true)
		touch(document.CustomerKey{Company: r.CompanyID, ID: r.CustomerID}, c.e.RecordedAt)
	}
	var out []statsSaleRow
	for _, k := range order {
		if r := rows[k]; r.Changed {
			out = append(out, statsSaleOf(r))
		}
	}
	if len(out) == 0 && len(customers) == 0 {
		return nil
	}
	j, err := json.Marshal(bulk.OrNone(out))
	if err != nil {
		return fmt.Errorf("projections: campaign_stats: encode sales: %w", err)
	}
	companies, ids := make([]string, 0, len(customers)), make([]string, 0, len(customers))
	for k := range customers {
		companies, ids = append(companies, k.Company), append(ids, k.ID)
	}
	// One round trip a commit of sales: the upsert, and the members of the
	// customers (the sale may count for any campaign they have activity
	// of; most customers have none, and then nothing more is done).
	// campaign_stats_members is not written here, so the statement's
	// snapshot of it is what the batch found.
	mrows, err := tx.Query(ctx, `
		WITH up AS (INSERT INTO campaign_stats_sales (company_id, sale_id, customer_id, doc, keyed_rows, total_given, version,
			counted, sale_date, revenue, stat_rows)
		SELECT company_id, sale_id, customer_id, doc, keyed_rows, total_given, version, counted, sale_date, revenue, stat_rows
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, sale_id text, customer_id text, doc jsonb, keyed_rows jsonb,
			total_given boolean, version bigint, counted boolean, sale_date timestamptz, revenue bigint, stat_rows jsonb)
		ON CONFLICT (company_id, sale_id) DO UPDATE SET customer_id = EXCLUDED.customer_id, doc = EXCLUDED.doc,
			keyed_rows = EXCLUDED.keyed_rows, total_given = EXCLUDED.total_given, version = EXCLUDED.version,
			counted = EXCLUDED.counted, sale_date = EXCLUDED.sale_date, revenue = EXCLUDED.revenue,
			stat_rows = EXCLUDED.stat_rows)
		SELECT m.company_id, m.campaign_key, m.customer_id FROM campaign_stats_members m
		JOIN unnest($2::text[], $3::text[]) AS c(company_id, customer_id) USING (company_id, customer_id)`,
		string(j), companies, ids)
	if err != nil {
		return fmt.Errorf("projections: campaign_stats: write sales: %w", err)
	}
	var members []memberKey
	var m memberKey
	if _, err := pgx.ForEachRow(mrows, []any{&m.company, &m.campaign, &m.customer}, func() error {
		members = append(members, m)
		return nil
	}); err != nil {
		return fmt.Errorf("projections: campaign_stats: write sales: %w", err)
	}
	for _, m := range members {
		touched(m, customers[document.CustomerKey{Company: m.company, ID: m.customer}])
	}
	return nil
}

// statsSaleOf is the row stored for r: the fields the figures read, and
// the figures' view of the sale (revenue as the sales read model counts
// it, rows as campaign.SaleRow).
func statsSaleOf(r *document.SaleRow) statsSaleRow {
	doc := map[string]any{}
	for _, k := range statsSaleFields {
		if v, ok := r.Doc[k]; ok {
			doc[k] = v
		}
	}
	keyed := make([]sale.Row, len(r.Rows))
	for i, row := range r.Rows {
		fields := make(map[string]any, len(statsRowFields))
		for _, k := range statsRowFields {
			if v, ok := row.Fields[k]; ok {
				fields[k] = v
			}
		}
		keyed[i] = sale.Row{Key: row.Key, ProductID: row.ProductID, Fields: fields}
	}
	out := statsSaleRow{CompanyID: r.CompanyID, SaleID: r.SaleID, CustomerID: r.CustomerID, Doc: doc,
		KeyedRows: keyed, TotalGiven: r.TotalGiven, Version: r.Version, Counted: r.Counted(),
		StatRows: make([]campaign.SaleRow, 0, len(r.Rows))}
	if t, ok := r.Date(); ok {
		out.SaleDate = &t
	}
	if out.Counted {
		out.Revenue, _ = document.Money(r.Doc[document.SaleFieldTotal])
	}
	for _, row := range r.Rows {
		s := campaign.SaleRow{ProductID: row.ProductID, Deleted: row.Fields[document.RowFieldIsDeleted] == true}
		s.ExternalID, _ = row.Fields["product_id"].(string)
		s.Units = hundredths(row.Fields["quantity"])
		s.Revenue, _ = document.Money(row.Fields[document.RowFieldTotal])
		s.Discount, _ = document.Money(row.Fields["discount"])
		s.Returned = sale.Returned(document.StringList(row.Fields["tags"]))
		out.StatRows = append(out.StatRows, s)
	}
	return out
}

// hundredths reads a quantity (two decimals at most) as hundredths.
func hundredths(v any) int64 {
	var f float64
	switch v := v.(type) {
	case json.Number:
		f, _ = strconv.ParseFloat(string(v), 64)
	case float64:
		f = v
	case string:
		f, _ = strconv.ParseFloat(v, 64)
	}
	n, ok := document.RoundMoney(f * 100)
	if !ok || math.IsNaN(f) {
		return 0
	}
	return n
}
