package activity

import (
	"slices"
	"testing"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
)

// TestPersonalAreTheCustomerFields: the fields sealed on the write side
// (Personal) are exactly the ones the catalogue sends to the customer
// part, and the token; a field added to one and not the other would be
// stored in clear or lost.
func TestPersonalAreTheCustomerFields(t *testing.T) {
	var got []string
	for name, f := range fields {
		if f.kind == kindCustomer || f.kind == kindToken {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(Personal))
	if !slices.Equal(got, want) {
		t.Errorf("customer fields %v, Personal %v", got, want)
	}
}

// TestCatalogueTargets: every customer field the catalogue names is one
// a customer record accepts.
func TestCatalogueTargets(t *testing.T) {
	p := customer.NewParser(company.Company{Timezone: "UTC"})
	for name, f := range fields {
		if f.kind != kindCustomer || f.to == customer.FieldExternalID {
			continue
		}
		if _, err := p.ParseMap(map[string]any{"external_id": "x", f.to: ""}); err != nil {
			t.Errorf("%s -> %s: %v", name, f.to, err)
		}
	}
}
