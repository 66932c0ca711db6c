package sale_test

import (
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/sale"
)

// TestParseSaleState checks that sale_state accepts the seven interface
// states and the shop platforms' spellings of them (Magento's order
// states, WooCommerce's order statuses), in any case and with - or a
// space for _, and normalises each to the state it means; that anything
// else is refused naming sale_state, with a reason listing what is
// accepted.
func TestParseSaleState(t *testing.T) {
	p := sale.NewParser(acme)
	tests := []struct{ sent, want string }{
		{"NEW", "NEW"},
		{"pending_payment", "PENDING_PAYMENT"},
		{"Pending Payment", "PENDING_PAYMENT"},
		{"processing", "PROCESSING"},
		{"COMPLETE", "COMPLETE"},
		{"CANCELLED", "CANCELLED"},
		{"CLOSED", "CLOSED"},
		{" holded ", "HOLDED"},
		// Magento 2, its order state upper-cased.
		{"CANCELED", "CANCELLED"},
		{"canceled", "CANCELLED"},
		{"PAYMENT_REVIEW", "PENDING_PAYMENT"},
		{"payment-review", "PENDING_PAYMENT"},
		// WooCommerce, its order status upper-cased.
		{"COMPLETED", "COMPLETE"},
		{"completed", "COMPLETE"},
		{"PENDING", "PENDING_PAYMENT"},
		{"ON-HOLD", "HOLDED"},
		{"on hold", "HOLDED"},
		{"ON_HOLD", "HOLDED"},
		{"REFUNDED", "CLOSED"},
		{"FAILED", "CANCELLED"},
		{"CHECKOUT-DRAFT", "CANCELLED"},
		{"checkout-draft", "CANCELLED"},
	}
	for _, tt := range tests {
		t.Run(tt.sent, func(t *testing.T) {
			r, err := p.Parse([]byte(`{"sale_external_id": "S", "sale_state": "` + tt.sent + `"}`))
			if err != nil || r.TxProblem != nil {
				t.Fatalf("refused: %v %v", err, r.TxProblem)
			}
			if got := r.Tx["sale_state"]; got != tt.want {
				t.Errorf("sale_state %q is %v, want %s", tt.sent, got, tt.want)
			}
		})
	}
	for _, sent := range []string{`"SHIPPED"`, `"ONHOLD"`, `"ON__HOLD"`, `"DRAFT"`, `"wc-completed"`, `"CANCELLED!"`, `1`, `true`, `["NEW"]`} {
		t.Run("refused "+sent, func(t *testing.T) {
			r, err := p.Parse([]byte(`{"sale_external_id": "S", "sale_state": ` + sent + `}`))
			if err != nil || r.TxProblem == nil || r.TxProblem.Field != "sale_state" {
				t.Fatalf("got %+v, %v; want a TxProblem of sale_state", r, err)
			}
			for _, accepted := range append(sale.States, "CANCELED", "PAYMENT_REVIEW", "COMPLETED", "PENDING", "ON_HOLD", "REFUNDED", "FAILED", "CHECKOUT_DRAFT") {
				if !strings.Contains(r.TxProblem.Reason, accepted) {
					t.Errorf("reason %q does not list %s", r.TxProblem.Reason, accepted)
				}
			}
		})
	}
}

// TestDecideStoresTheSevenStates: an alias is stored as the state it
// means, on a new sale and on a stored one, so that statistics and
// retrieval only ever see the seven; FAILED and REFUNDED sales are not
// counted.
func TestDecideStoresTheSevenStates(t *testing.T) {
	_, o, rejected := decide(t, nil, `{`+head+`, "sale_state": "COMPLETED", "product_id": "1", "quantity": 1, "unit_price": 5}`)
	if len(rejected) > 0 || o.Set["sale_state"] != "COMPLETE" {
		t.Errorf("new sale: rejected %v, sale_state %v; want COMPLETE", rejected, o.Set["sale_state"])
	}
	for sent, want := range map[string]string{"REFUNDED": "CLOSED", "FAILED": "CANCELLED", "on-hold": "HOLDED"} {
		b, o, rejected := decide(t, stored(), `{"sale_external_id": "S", "sale_state": "`+sent+`"}`)
		if len(rejected) > 0 || o.Set["sale_state"] != want {
			t.Errorf("%s: rejected %v, sale_state %v; want %s", sent, rejected, o.Set["sale_state"], want)
		}
		if st := b.Touched()[0].SaleState; st != want || sale.Uncounted(st) != (want != "HOLDED") {
			t.Errorf("%s: stored state %s, uncounted %v", sent, st, sale.Uncounted(st))
		}
	}
}
