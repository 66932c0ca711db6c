package document

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

func TestCanonicalJSON(t *testing.T) {
	for _, v := range []string{
		`12345678901234567`, `1.50`, `-0`, `1e5`, `1E+05`, `0.000001`, `true`, `false`, `null`,
		`"plain"`, `""`, `"é ü 日本"`, `"<b>&amp;</b>"`, `"a` + "\u2028" + `b"`, `"\u00e9"`, `"\n\t\\\""`, `"\/"`,
		`"a` + "\xff" + `b"`, `"\ud800"`, `"\ud83d\ude00"`, `"\ud800\u0041"`, `"\ud800\ud800"`, `"\uD83D\uDE00 \u00E9"`, `"\b\f\u0001"`,
		`{"b": 1.0, "a": [1, "x", null, {"z": "<", "y": 2}]}`, `[]`, `{}`, `["b","a"]`,
	} {
		var x any
		if err := DecodeNumbers([]byte(v), &x); err != nil {
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
		var want CustomerEventData
		if err := json.Unmarshal([]byte(data), &want); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var got CustomerEventData
		if err := DecodeCustomerEvent([]byte(data), &got); err != nil || !cmp.Equal(want, got) {
			t.Errorf("%s: got %+v, %v; want %+v", data, got, err, want)
		}
	}
	for _, data := range []string{``, `[]`, `{"customer_id": 1}`, `{"customer_id": ["c1"]}`, `{"sealed": "!!"}`, `{"sealed": 5}`, `"c1"`} {
		var got CustomerEventData
		if err := DecodeCustomerEvent([]byte(data), &got); err == nil {
			t.Errorf("%s: no error", data)
		}
	}
}

func TestDecodeCustomerChanges(t *testing.T) {
	dec := NewCustomerDecoder()
	for _, plain := range []string{`{"set":{"a":1}`, `{"set":[1]}`, `{"unset":{}}`, `[]`, `{"set":{"a":1}} {}`, `{"set":{"a":}}`} {
		if _, err := dec.Changes([]byte(plain)); err == nil {
			t.Errorf("%s: no error", plain)
		}
	}
	plain := `{ "set" : { "a\u0062" : [1, {"c": "}"}], "d": "x\"y", "e": -1.5e3 } , "unset": ["f"], "other": {"g": 1}}`
	ch, err := dec.Changes([]byte(plain))
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
		ch, err := dec.Changes([]byte(plain))
		if err == nil {
			err = NewCustomerRow(CustomerKey{"co1", "c1"}, time.Now()).Apply(ch)
		}
		if err == nil {
			t.Errorf("%s: no error", plain)
		}
	}
}
