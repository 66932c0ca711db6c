package projections

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/clientele/clientele/domain/customer"
)

func TestCanonicalJSON(t *testing.T) {
	for _, v := range []string{
		`12345678901234567`, `1.50`, `-0`, `1e5`, `1E+05`, `0.000001`, `true`, `false`, `null`,
		`"plain"`, `""`, `"é ü 日本"`, `"<b>&amp;</b>"`, `"a` + "\u2028" + `b"`, `"\u00e9"`, `"\n\t\\\""`, `"\/"`,
		`"a` + "\xff" + `b"`, `"\ud800"`, `"\ud83d\ude00"`, `"\ud800\u0041"`, `"\ud800\ud800"`, `"\uD83D\uDE00 \u00E9"`, `"\b\f\u0001"`,
		`{"b": 1.0, "a": [1, "x", null, {"z": "<", "y": 2}]}`, `[]`, `{}`, `["b","a"]`,
	} {
		var x any
		if err := decodeNumbers([]byte(v), &x); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonicalJSON(gjson.Parse(v))
		if err != nil || string(got) != string(want) {
			t.Errorf("canonicalJSON(%s) = %s, %v; want %s", v, got, err, want)
		}
	}
}

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
	r := newCustomerRow(customerKey{"co1", "c1"}, at)
	want := map[string]any{}
	for i, plain := range changes {
		ch, err := newCustomerDecoder().changes([]byte(plain))
		if err != nil {
			t.Fatalf("changes %d: %v", i, err)
		}
		if err := r.apply(ch); err != nil {
			t.Fatalf("changes %d: %v", i, err)
		}
		var old customer.Changes
		if err := decodeNumbers([]byte(plain), &old); err != nil {
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
		if err := json.Unmarshal(r.appendDoc(nil, map[string]json.RawMessage{}), &doc); err != nil {
			t.Fatalf("doc after changes %d: %v", i, err)
		}
		if diff := cmp.Diff(got, doc); diff != "" {
			t.Errorf("doc after changes %d (-state +doc):\n%s", i, diff)
		}
	}
	r.forget()
	if diff := cmp.Diff(map[string]string{"id": `"c1"`, "is_deleted": "false", "is_forgotten": "true"}, rawStrings(r.appendDoc(nil, map[string]json.RawMessage{}), t)); diff != "" {
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
		case slices.Contains(ownedCustomerFields, k):
		case v == nil:
			delete(doc, k)
		case slices.Contains(customerLists, k):
			doc[k] = addToList(nil, stringList(v))
		case slices.Contains(customerDatetimes, k):
			doc[k] = utcDatetime(v)
		default:
			doc[k] = v
		}
	}
	for _, k := range ch.Unset {
		if !slices.Contains(ownedCustomerFields, k) {
			delete(doc, k)
		}
	}
	for k, add := range ch.Add {
		if list := listName(k); list != "" {
			doc[list] = addToList(stringList(doc[list]), add)
		}
	}
	for k, remove := range ch.Remove {
		if list := listName(k); list != "" {
			kept := slices.DeleteFunc(stringList(doc[list]), func(s string) bool { return slices.Contains(remove, s) })
			doc[list] = orNone(kept)
		}
	}
	doc["id"], doc[customer.FieldIsDeleted], doc[customer.FieldIsForgotten] = id, false, false
	for _, l := range customerLists {
		if _, ok := doc[l]; !ok {
			doc[l] = []string{}
		}
	}
}

// TestDecodeCustomerEvent: the split decoding reads what json.Unmarshal
// reads, from the event data as the store returns it (jsonb's spacing and
// order) or as written, and fails where it fails on valid JSON (the data
// comes from a jsonb column: malformed JSON never reaches it).
func TestDecodeCustomerEvent(t *testing.T) {
	for _, data := range []string{
		`{"fields": ["a", "b"], "sealed": "AAECAwQFBgc=", "created": true, "customer_id": "c1"}`,
		`{"customer_id":"c\u00e9","created":false,"fields":[],"sealed":"AAEC"}`,
		` { "customer_id" : "c1" , "sealed" : null } `,
		`{"sealed": "AA\u003d\u003d", "customer_id": "c1", "fields": [{"x": "]}"}, 1e5, "\""]}`,
		`{"customer_id": "c1"}`,
		`{"customer_id": "c\ud83d\ude00\ud800\u0041", "sealed": ""}`,
		`{"customer_id": null, "sealed": "AAEC"}`,
		`{}`,
	} {
		var want customerEventData
		if err := json.Unmarshal([]byte(data), &want); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var got customerEventData
		if err := decodeCustomerEvent([]byte(data), &got); err != nil || !cmp.Equal(want, got) {
			t.Errorf("%s: got %+v, %v; want %+v", data, got, err, want)
		}
	}
	for _, data := range []string{``, `[]`, `{"customer_id": 1}`, `{"customer_id": ["c1"]}`, `{"sealed": "!!"}`, `{"sealed": 5}`, `"c1"`} {
		var got customerEventData
		if err := decodeCustomerEvent([]byte(data), &got); err == nil {
			t.Errorf("%s: no error", data)
		}
	}
}

func TestDecodeCustomerChanges(t *testing.T) {
	dec := newCustomerDecoder()
	for _, plain := range []string{`{"set":{"a":1}`, `{"set":[1]}`, `{"unset":{}}`, `[]`, `{"set":{"a":1}} {}`, `{"set":{"a":}}`} {
		if _, err := dec.changes([]byte(plain)); err == nil {
			t.Errorf("%s: no error", plain)
		}
	}
	plain := `{ "set" : { "a\u0062" : [1, {"c": "}"}], "d": "x\"y", "e": -1.5e3 } , "unset": ["f"], "other": {"g": 1}}`
	ch, err := dec.changes([]byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	want := customerChanges{Set: []jsonMember{{"ab", gjson.Parse(`[1, {"c": "}"}]`)}, {"d", gjson.Parse(`"x\"y"`)}, {"e", gjson.Parse(`-1.5e3`)}}, Unset: []string{"f"}}
	rawOnly := cmp.Transformer("raw", func(r gjson.Result) string { return r.Raw })
	if diff := cmp.Diff(want, *ch, cmp.AllowUnexported(jsonMember{}), rawOnly); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Values that are not JSON are caught where they are applied.
	for _, plain := range []string{`{"set":{"a":tru}}`, `{"set":{"a":[1}}}`, `{"set":{"tags":["a",]}}`, `{"set":{"date_joined":"\x"}}`, `{"set":{"a":"\q"}}`} {
		ch, err := dec.changes([]byte(plain))
		if err == nil {
			err = newCustomerRow(customerKey{"co1", "c1"}, time.Now()).apply(ch)
		}
		if err == nil {
			t.Errorf("%s: no error", plain)
		}
	}
}
