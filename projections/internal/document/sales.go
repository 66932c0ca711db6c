package document

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/jackc/pgx/v5"
)

// Fields of a retrieved sale.
const (
	SaleFieldExternalID = "sale_external_id"
	saleFieldRows       = "sale_rows"
	SaleFieldTotal      = "sale_total"
	SaleFieldDiscount   = "sale_discount"
	SaleFieldIsDeleted  = "sale_is_deleted"
	SaleFieldState      = "sale_state"
	SaleFieldDate       = "sale_date"
	RowFieldTotal       = "total"
	RowFieldIsDeleted   = "is_deleted"
)

// Fields the projector owns: a change never sets them.
var ownedSaleFields = []string{SaleFieldExternalID, saleFieldRows}

// SaleRow is a row of the sales table while events are applied to it.
// Doc is the transaction as retrieval shows it; Rows and TotalGiven are
// what a later change needs besides: every row with its key (deleted
// ones too), and whether sale_total was given (else the rows compute it).
type SaleRow struct {
	CompanyID, SaleID, CustomerID string
	Doc                           map[string]any
	Rows                          []sale.Row
	TotalGiven                    bool
	Version                       int64
	CreatedAt, UpdatedAt          time.Time
	Changed                       bool
}

// Advance reports whether an event at version v of the sale's stream is
// new to the row, and marks the row changed: a replayed event is skipped.
func (r *SaleRow) Advance(e *eventstore.RecordedEvent) bool {
	if e.StreamVersion <= r.Version {
		return false
	}
	r.Version, r.UpdatedAt, r.Changed = e.StreamVersion, e.RecordedAt.UTC(), true
	return true
}

// ApplyUpsert opens the event's personal fields with its customer's key
// and folds the event into the row. gone reports that the key is gone
// (the customer is forgotten): the row then keeps no personal field.
// The projector and the datasync feed share it, so both show the same.
func (r *SaleRow) ApplyUpsert(e *eventstore.RecordedEvent, u sale.Upserted, keys map[CustomerKey][]byte) (gone bool, err error) {
	var personal map[string]any
	if len(u.Sealed) > 0 {
		var ok bool
		personal, ok, err = OpenPersonal(keys, CustomerKey{r.CompanyID, u.CustomerID}, u.Sealed, sale.Personal)
		if err != nil {
			return false, fmt.Errorf("projections: sales: open %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		gone = !ok
	}
	r.Apply(u, personal, gone)
	return gone, nil
}

// Apply folds one SaleUpserted into the row: Set and Unset, the personal
// fields (or none, forgotten), the rows by key; then the derived fields.
func (r *SaleRow) Apply(u sale.Upserted, personal map[string]any, forgotten bool) {
	if r.CustomerID != "" && r.CustomerID != u.CustomerID {
		// The personal fields describe the sale's customer, and forgetting
		// finds them by it: another customer's go.
		DropFields(r.Doc, sale.Personal)
	}
	r.CustomerID = u.CustomerID
	for k, v := range u.Set {
		switch {
		case slices.Contains(ownedSaleFields, k) || slices.Contains(sale.Personal, k):
		case v == nil: // null is absent
			delete(r.Doc, k)
			r.TotalGiven = r.TotalGiven && k != SaleFieldTotal
		default:
			r.Doc[k] = v
			r.TotalGiven = r.TotalGiven || k == SaleFieldTotal
		}
	}
	for _, k := range u.Unset {
		if !slices.Contains(ownedSaleFields, k) {
			delete(r.Doc, k)
			r.TotalGiven = r.TotalGiven && k != SaleFieldTotal
		}
	}
	r.Doc[SaleFieldExternalID] = u.ExternalID
	if forgotten {
		DropFields(r.Doc, sale.Personal)
	}
	for k, v := range personal {
		if v == nil || v == "" { // "" removes the field
			delete(r.Doc, k)
		} else {
			r.Doc[k] = v
		}
	}
	for _, row := range u.Rows {
		if i := slices.IndexFunc(r.Rows, func(s sale.Row) bool { return s.Key == row.Key }); i >= 0 {
			r.Rows[i] = row
		} else {
			r.Rows = append(r.Rows, row)
		}
	}
	r.finish()
}

// finish sets the derived fields: sale_rows (the rows' fields in order,
// deleted rows left out), sale_total when it was not given (the shown
// rows' totals minus sale_discount), sale_is_deleted (false unless set),
// and sale_date in UTC.
func (r *SaleRow) finish() {
	shown := make([]map[string]any, 0, len(r.Rows))
	// Exact: the write side keeps the result within int64 (domain/sale),
	// but a sale imported before it did may be beyond, and is then shown
	// as it is rather than wrapped around.
	sum := new(big.Int)
	for _, row := range r.Rows {
		if row.Fields[RowFieldIsDeleted] == true {
			continue
		}
		shown = append(shown, row.Fields)
		t, _ := Money(row.Fields[RowFieldTotal])
		sum.Add(sum, big.NewInt(t))
	}
	r.Doc[saleFieldRows] = shown
	if !r.TotalGiven {
		discount, _ := Money(r.Doc[SaleFieldDiscount])
		if sum.Sub(sum, big.NewInt(discount)); sum.IsInt64() {
			r.Doc[SaleFieldTotal] = sum.Int64()
		} else {
			r.Doc[SaleFieldTotal] = json.Number(sum.String())
		}
	}
	if _, ok := r.Doc[SaleFieldIsDeleted]; !ok {
		r.Doc[SaleFieldIsDeleted] = false
	}
	if v, ok := r.Doc[SaleFieldDate]; ok {
		r.Doc[SaleFieldDate] = UtcDatetime(v)
	}
}

// Deleted reports whether the sale is deleted.
func (r *SaleRow) Deleted() bool { return r.Doc[SaleFieldIsDeleted] == true }

// State is the sale's sale_state, the default when it has none.
func (r *SaleRow) State() string {
	if s, ok := r.Doc[SaleFieldState].(string); ok && s != "" {
		return s
	}
	return sale.DefaultState
}

// Counted reports whether the sale counts in statistics and revenue.
func (r *SaleRow) Counted() bool { return !r.Deleted() && !sale.Uncounted(r.State()) }

// Date is the sale's sale_date, if it has one that reads as a datetime.
func (r *SaleRow) Date() (time.Time, bool) {
	s, _ := r.Doc[SaleFieldDate].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// Money reads an amount in minor units. Amounts are integers; anything
// else that is a number is rounded to the nearest unit. A number beyond
// int64 is not an amount (ok false): converting it would wrap.
func Money(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, true
		}
		f, err := v.Float64()
		if err != nil {
			return 0, false
		}
		return RoundMoney(f)
	case float64:
		return RoundMoney(v)
	case int64:
		return v, true
	case int:
		return int64(v), true
	}
	return 0, false
}

// RoundMoney rounds f to an int64, ok false when it is not within int64
// (NaN included): float64(math.MaxInt64) is 2^63, itself out of range.
func RoundMoney(f float64) (int64, bool) {
	f = math.Round(f)
	if !(f >= math.MinInt64 && f < math.MaxInt64) {
		return 0, false
	}
	return int64(f), true
}

// SaleTable is a table of sale rows that LoadSaleRows reads: the sales
// read model's (SalesTable), or the copy campaign statistics keep.
type SaleTable struct {
	// Name is the table's name.
	Name string
	// CreatedAt says whether the table keeps when each sale was created.
	CreatedAt bool
}

// SalesTable is the sales read model's table.
var SalesTable = SaleTable{Name: "sales", CreatedAt: true}

// LoadSaleRows reads the rows of the given sales from table, in one query;
// a sale without a row gets a new, empty one, created at the time in at
// (the zero time when at has none).
func LoadSaleRows(ctx context.Context, tx pgx.Tx, table SaleTable, keys []CatalogKey, at map[CatalogKey]time.Time) (map[CatalogKey]*SaleRow, error) {
	companies, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		companies[i], ids[i] = k.Company, k.ID
	}
	created := "NULL::timestamptz"
	if table.CreatedAt {
		created = "t.created_at"
	}
	rows, err := tx.Query(ctx, `SELECT t.company_id, t.sale_id, t.customer_id, t.doc, t.keyed_rows, t.total_given, t.version, `+created+`
		FROM `+pgx.Identifier{table.Name}.Sanitize()+` t JOIN unnest($1::text[], $2::text[]) AS k(company_id, sale_id) USING (company_id, sale_id)`,
		companies, ids)
	if err != nil {
		return nil, fmt.Errorf("projections: %s: load: %w", table.Name, err)
	}
	out := make(map[CatalogKey]*SaleRow, len(keys))
	var r SaleRow
	var createdAt *time.Time
	var doc, keyed []byte
	_, err = pgx.ForEachRow(rows, []any{&r.CompanyID, &r.SaleID, &r.CustomerID, &doc, &keyed, &r.TotalGiven, &r.Version, &createdAt}, func() error {
		row := r
		if createdAt != nil {
			row.CreatedAt = createdAt.UTC()
		}
		if err := DecodeNumbers(doc, &row.Doc); err != nil {
			return fmt.Errorf("doc of %s: %w", row.SaleID, err)
		}
		if err := DecodeNumbers(keyed, &row.Rows); err != nil {
			return fmt.Errorf("rows of %s: %w", row.SaleID, err)
		}
		out[CatalogKey{row.CompanyID, row.SaleID}] = &row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections: %s: load: %w", table.Name, err)
	}
	for _, k := range keys {
		if out[k] == nil {
			out[k] = NewSaleRow(k, at[k])
		}
	}
	return out, nil
}

// NewSaleRow is the row of a sale no event was applied to yet.
func NewSaleRow(k CatalogKey, at time.Time) *SaleRow {
	return &SaleRow{CompanyID: k.Company, SaleID: k.ID, Doc: map[string]any{}, CreatedAt: at.UTC(), UpdatedAt: at.UTC()}
}
