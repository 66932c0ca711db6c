package datasync

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
	"github.com/google/go-cmp/cmp"
)

// TestCustomerRowValues folds changes into a row and checks every field's
// JSON against what the projector wrote when it decoded the changes into
// Go values (mapFold): byte for byte, since datasync messages keep them
// so. The changes are written by hand, with what the write side never
// sends but old events or a client might hold.
func TestCustomerRowValues(t *testing.T) {
	changes := []string{
		`{"set":{"email":"ann@example.com","first_name":"Ann","can_email":true,"can_sms":false,
			"tags":["vip","b2b","vip"],"mailing_lists":"weekly",
			"date_joined":"2024-05-06T07:08:09+03:00","last_login":"2024-05-06T07:08:09.000Z",
			"COMPANY__score":12345678901234567,"COMPANY__ratio":1.50,"COMPANY__obj":{"b": [1, null], "a": "<x>"},
			"COMPANY__text":"\u00e9t\u00e9 & \"quoted\"","id":"other","is_deleted":true}}`,
		`{"set":{"first_name":"Anne","email":null,"birth_date":"not a date","date_joined":"2024-13-01T00:00:00Z"},
			"unset":["can_sms","id","is_forgotten"],
			"add":{"tags":["a","vip"],"mailing_lists.add":["daily","weekly"],"city":["x"]},
			"remove":{"tags":["b2b"],"mailing_lists":["weekly"],"city":["x"]}}`,
		`{"set":{"tags":["x", null, 3, "y"],"mailing_lists":null,"last_login":null}}`,
		`{"remove":{"mailing_lists":["x"]},"add":{"tags.add":["<z>"]}}`,
		`{"set":{"tags":{"a":"b"},"COMPANY__list":["b","a"],"last_login":"2024-05-06T07:08:09.5Z","date_joined":"2024-05-06T07:08:09Z"}}`,
		`{"set":{"tags":["<b>","a\u00e9","a"],"mailing_lists":[],"date_joined":"2024-05-06T07:08:09.123456-01:30"}}`,
		// Escapes, surrogate pairs and lone surrogates, bytes that are not
		// UTF-8: read as encoding/json reads them.
		`{"set":{"COMPANY__s\u00e9":"\ud83d\ude00 \ud800\u0041 \ud800\ud800 \/ <&>","tags":["\ud83d\ude00","a\u0062","a` + "\xff" + `", 1],
			"COMPANY__bad` + "\xff" + `":"x` + "\xff" + `","date_joined":"2024-05-06T07:08:09\u002b03:00","last_login":"\u0032024-05-06T07:08:09.5+00:00"},
			"add":{"mailing_lists":["\u00e9","\ud83d\ude00"]},"remove":{"tags":["ab"]}}`,
		`{"set":{"mailing_lists":"only","COMPANY__list":["\u00e9",{"a":"\ud800\u0041"}]},"unset":["COMPANY__s\u00e9"],"remove":{"mailing_lists.remove":["only"]}}`,
	}
	at := time.Date(2024, 6, 12, 10, 0, 0, 0, time.UTC)
	r := document.NewCustomerRow(document.CustomerKey{Company: "co1", ID: "c1"}, at)
	want := map[string]any{}
	for i, plain := range changes {
		ch, err := document.NewCustomerDecoder().Changes([]byte(plain))
		if err != nil {
			t.Fatalf("changes %d: %v", i, err)
		}
		if err := r.Apply(ch); err != nil {
			t.Fatalf("changes %d: %v", i, err)
		}
		var old customer.Changes
		if err := document.DecodeNumbers([]byte(plain), &old); err != nil {
			t.Fatalf("changes %d: %v", i, err)
		}
		mapFold(want, r.CustomerID, old)
		got := customerState(r, false).fields
		wantJSON := map[string]string{}
		for k, v := range want {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON[k] = string(b)
		}
		gotJSON := map[string]string{}
		for k, v := range got {
			gotJSON[k] = string(v)
		}
		if diff := cmp.Diff(wantJSON, gotJSON); diff != "" {
			t.Errorf("after changes %d (-want +got):\n%s", i, diff)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(r.AppendDoc(nil, map[string]json.RawMessage{}), &doc); err != nil {
			t.Fatalf("doc after changes %d: %v", i, err)
		}
		if diff := cmp.Diff(got, doc); diff != "" {
			t.Errorf("doc after changes %d (-state +doc):\n%s", i, diff)
		}
	}
	r.Forget()
	if diff := cmp.Diff(map[string]string{"id": `"c1"`, "is_deleted": "false", "is_forgotten": "true"}, rawStrings(r.AppendDoc(nil, map[string]json.RawMessage{}), t)); diff != "" {
		t.Errorf("forgotten (-want +got):\n%s", diff)
	}
}

func rawStrings(doc []byte, t *testing.T) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// mapFold is how the projector applied changes to a document of Go values
// before it kept them as JSON, finish included: the reference.
func mapFold(doc map[string]any, id string, ch customer.Changes) {
	for k, v := range ch.Set {
		switch {
		case slices.Contains(document.OwnedCustomerFields, k):
		case v == nil:
			delete(doc, k)
		case slices.Contains(document.CustomerLists, k):
			doc[k] = document.AddToList(nil, document.StringList(v))
		case slices.Contains(document.CustomerDatetimes, k):
			doc[k] = document.UtcDatetime(v)
		default:
			doc[k] = v
		}
	}
	for _, k := range ch.Unset {
		if !slices.Contains(document.OwnedCustomerFields, k) {
			delete(doc, k)
		}
	}
	for k, add := range ch.Add {
		if list := document.ListName(k); list != "" {
			doc[list] = document.AddToList(document.StringList(doc[list]), add)
		}
	}
	for k, remove := range ch.Remove {
		if list := document.ListName(k); list != "" {
			kept := slices.DeleteFunc(document.StringList(doc[list]), func(s string) bool { return slices.Contains(remove, s) })
			doc[list] = bulk.OrNone(kept)
		}
	}
	doc["id"], doc[customer.FieldIsDeleted], doc[customer.FieldIsForgotten] = id, false, false
	for _, l := range document.CustomerLists {
		if _, ok := doc[l]; !ok {
			doc[l] = []string{}
		}
	}
}
