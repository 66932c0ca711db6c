package shop_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/domain/values"
)

func TestParse(t *testing.T) {
	p := shop.NewParser(company.Company{ShortName: "ACME"})
	tests := []struct {
		name, in string
		want     shop.Record
		field    string // the rejected field; "-" for a rejection without one
	}{
		{"numeric id", `{"external_id": 7}`, shop.Record{ExternalID: "7", Set: map[string]any{}}, ""},
		{"normalised", `{"external_id": "a", "email": "X@Y.FI", "country": "uk", "shop_type": "ONLINE", "is_hidden": "1"}`,
			shop.Record{ExternalID: "a", Set: map[string]any{"email": "x@y.fi", "country": "GB", "shop_type": "online", "is_hidden": true}}, ""},
		{"empty removes", `{"external_id": "a", "city": "", "name": null}`, shop.Record{ExternalID: "a", Set: map[string]any{}, Unset: []string{"city"}}, ""},
		{"empty is_hidden is false", `{"external_id": "a", "is_hidden": ""}`, shop.Record{ExternalID: "a", Set: map[string]any{"is_hidden": false}}, ""},
		{"company field", `{"external_id": "a", "acme__x": [1]}`, shop.Record{ExternalID: "a", Set: map[string]any{"ACME__x": []any{jsonNumber("1")}}}, ""},
		{"no id", `{"name": "x"}`, shop.Record{}, "external_id"},
		{"blank id", `{"external_id": " "}`, shop.Record{}, "external_id"},
		{"shop type", `{"external_id": "a", "shop_type": "kiosk"}`, shop.Record{}, "shop_type"},
		{"country", `{"external_id": "a", "country": "XX"}`, shop.Record{}, "country"},
		{"unknown fields ignored", `{"external_id": "a", "foo": 1, "store_id": "", "OTHER__x": 1, "acme__": 2, "name": "N", "mage_type": null}`,
			shop.Record{ExternalID: "a", Set: map[string]any{"name": "N"}, Ignored: values.Ignored{"OTHER__x", "acme__", "foo", "store_id"}}, ""},
		{"unquotable key ignored unnamed", `{"external_id": "a", "Ann Smith <ann@x.fi>": 1}`,
			shop.Record{ExternalID: "a", Set: map[string]any{}, Ignored: values.Ignored{values.UnnamedField}}, ""},
		{"bad value beside an unknown field", `{"external_id": "a", "foo": 1, "email": "nope"}`, shop.Record{}, "email"},
		{"not an object", `[1]`, shop.Record{}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Parse([]byte(tt.in))
			var prob *shop.Problem
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.field != "" && !errors.As(err, &prob):
				t.Fatalf("accepted %+v, want a rejection of %s", got, tt.field)
			case tt.field != "":
				if f := map[bool]string{true: "-", false: prob.Field}[prob.Field == ""]; f != tt.field {
					t.Errorf("rejected field %q, want %q", f, tt.field)
				}
			default:
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestBookUpsert(t *testing.T) {
	n := 0
	b := shop.NewBook(func() string { n++; return "id" + string(rune('0'+n)) })
	b.Load(shop.State{ID: "old", ExternalID: "S1", Version: 3})
	o := b.Decide(shop.Record{ExternalID: "S1", Set: map[string]any{"name": "x"}})
	if o.ShopID != "old" || o.Created || o.Event == nil || o.Event.Set["is_hidden"] != nil {
		t.Errorf("existing shop: %+v %+v", o, o.Event)
	}
	o = b.Decide(shop.Record{ExternalID: "S2", Set: map[string]any{}})
	if !o.Created || o.Event.Set["is_hidden"] != false || o.Event.Set["external_id"] != "S2" {
		t.Errorf("new shop: %+v %+v", o, o.Event)
	}
	if o2 := b.Decide(shop.Record{ExternalID: "S2", Set: map[string]any{}}); o2.ShopID != o.ShopID || o2.Event != nil {
		t.Errorf("same external_id again: %+v", o2)
	}
	if got := len(b.Touched(map[string]int64{"old": 3})); got != 2 {
		t.Errorf("touched %d, want 2", got)
	}
}
