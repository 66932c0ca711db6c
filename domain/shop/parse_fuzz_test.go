package shop_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/domain/values"
)

// FuzzParse checks the record parser on any bytes: a refusal is a
// *Problem, and an accepted record has its external_id, encodes to valid
// JSON without U+0000, and is its own normal form: written back as an
// import record, it parses to the same record (idempotence).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"external_id": 7, "name": "Main street", "email": "X@Y.FI", "country": "uk", "shop_type": "ONLINE", "is_hidden": "1"}`,
		`{"external_id": "a", "city": "", "name": null, "is_hidden": "", "acme__x": [1, {"y": 2.50}], "ACME__z": ""}`,
		`{"external_id": " ", "shop_type": "kiosk"}`, `{"external_id": "a", "Ann Smith <ann@x.fi>": 1, "store_id": 2, "OTHER__x": 3}`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	p := shop.NewParser(company.Company{ShortName: "ACME"})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, _, reason := values.DecodeRecord(raw); reason != "" {
			return // FuzzDecodeRecord's (domain/values) to check
		}
		r, err := p.Parse(raw)
		if err != nil {
			fuzzcheck.Rejection(t, err)
			return
		}
		fuzzcheck.JSON(t, "record", r)
		fuzzcheck.Ignored(t, r.Ignored)
		if r.ExternalID == "" {
			t.Fatal("accepted without an external_id")
		}
		m := map[string]any{"external_id": r.ExternalID}
		for k, v := range r.Set {
			m[k] = v
		}
		for _, k := range r.Unset {
			m[k] = ""
		}
		again, err := p.Parse(fuzzcheck.JSON(t, "normal form", m))
		if err != nil {
			t.Fatalf("the normal form of %s is refused: %v", raw, err)
		}
		r.Ignored = nil // the normal form holds fields only
		if diff := cmp.Diff(r, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the normal form of %s parses to another record (-first +again):\n%s", raw, diff)
		}
	})
}
