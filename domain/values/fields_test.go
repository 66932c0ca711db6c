package values_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/values"
)

// TestCompanyField: the company's prefix in any case is its field, stored
// under the short name as configured; anything else is no company field
// (the parsers ignore it).
func TestCompanyField(t *testing.T) {
	cases := []struct {
		key, want string
		ok        bool
	}{
		{"ACME__size", "ACME__size", true},
		{"acme__size", "ACME__size", true},
		{"ACME____x", "ACME____x", true},
		{"OTHER__size", "", false},
		{"ACME__", "", false},
		{"__size", "", false},
		{"size", "", false},
	}
	for _, tc := range cases {
		if got, ok := values.CompanyField("ACME", tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("CompanyField(ACME, %q) = %q %v, want %q %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

// TestIgnored: names are kept sorted and once; a name that does not look
// like a field name is never quoted, all such names being UnnamedField;
// a record lists at most MaxIgnored names.
func TestIgnored(t *testing.T) {
	var ig values.Ignored
	for _, name := range []string{"store_id", "mage_type", "sale_rows.store_id", "store_id", "ann@example.com, Ann", "sale_rows.store_id", "Ann Smith", "a"} {
		ig.Ignore(name)
	}
	want := values.Ignored{values.UnnamedField, "a", "mage_type", "sale_rows.store_id", "store_id"}
	if diff := cmp.Diff(want, ig); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if values.SafeName(values.UnnamedField) != "" {
		t.Errorf("UnnamedField %q looks like a field name: a real key could be listed under it", values.UnnamedField)
	}

	var many values.Ignored
	for i := range values.MaxIgnored + 10 {
		many.Ignore(fmt.Sprintf("f%05d", i))
	}
	many.Ignore("f00000") // known already: no change
	if len(many) != values.MaxIgnored || many[len(many)-1] != fmt.Sprintf("f%05d", values.MaxIgnored-1) {
		t.Errorf("%d names kept, the last %q; want the first %d", len(many), many[len(many)-1], values.MaxIgnored)
	}
}
