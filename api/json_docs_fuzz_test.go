package api

import (
	"encoding/json"
	"testing"
)

// FuzzAppendDoc checks appendDoc against encoding/json on any valid JSON
// text: what PostgreSQL prints is one.
func FuzzAppendDoc(f *testing.F) {
	for _, doc := range jsonbTexts {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		want, err := json.Marshal(json.RawMessage(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDoc(nil, doc); string(got) != string(want) {
			t.Errorf("appendDoc(%q)\n got %q\nwant %q", doc, got, want)
		}
	})
}
