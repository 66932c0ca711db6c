package document

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/clientele/clientele/domain/sale"
)

// TestSaleTotalNeverWraps: a sale whose rows were imported before the
// write side kept the derived total within int64 shows its exact total,
// not one wrapped around, and counts no revenue it cannot store.
func TestSaleTotalNeverWraps(t *testing.T) {
	r := &SaleRow{Doc: map[string]any{}}
	r.Rows = []sale.Row{
		{Key: "a", Fields: map[string]any{"total": json.Number("5000000000000000000")}},
		{Key: "b", Fields: map[string]any{"total": json.Number("5000000000000000000")}},
	}
	r.finish()
	if got := r.Doc[SaleFieldTotal]; got != json.Number("10000000000000000000") {
		t.Errorf("sale_total %v (%T), want 10000000000000000000", got, got)
	}
	if n, ok := Money(r.Doc[SaleFieldTotal]); ok {
		t.Errorf("money(10000000000000000000) = %d, want not an amount", n)
	}

	r.Rows[1].Fields["total"] = json.Number("-5000000000000000000")
	r.Doc[SaleFieldDiscount] = json.Number("1")
	r.finish()
	if got := r.Doc[SaleFieldTotal]; got != int64(-1) {
		t.Errorf("sale_total %v (%T), want -1", got, got)
	}

	for _, v := range []any{1e19, -1e19, math.NaN(), json.Number("9.3e18"), float64(math.MaxInt64)} {
		if n, ok := Money(v); ok {
			t.Errorf("money(%v) = %d, want not an amount", v, n)
		}
	}
	if n, ok := Money(json.Number("-9223372036854775808")); !ok || n != math.MinInt64 {
		t.Errorf("money(min int64) = %d, %v", n, ok)
	}
	if n, ok := Money(-9.2e18); !ok || n != -9200000000000000000 {
		t.Errorf("money(-9.2e18) = %d, %v", n, ok)
	}
}
