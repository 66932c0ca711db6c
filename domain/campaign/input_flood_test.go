package campaign

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/domain"
)

// TestUnknownFieldFlood: a body of 300,000 unknown fields is refused from
// a walk of its keys, naming the first 100 in the order sent and counting
// the rest, without decoding it; a body of a few unknown fields is read
// whole, its problems sorted as before; a known field's value, whatever
// it holds ("," and "}" in strings, nested objects), is skipped whole.
func TestUnknownFieldFlood(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"name": "x, \"y\": }", "folder": {"id": 1, "name": "{"}, `)
	for i := range 300_000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `": [1, {"a": "}"}]`)
	}
	b.WriteString(`}`)
	raw := []byte(b.String())
	if err := unknownFlood(raw); err == nil {
		t.Fatal("no error")
	}
	_, err := ParseInput(raw, time.UTC)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.Invalid {
		t.Fatalf("%v", err)
	}
	if len(de.Details) != domain.MaxDetails || de.More != 299_900 || de.Details[0].Field != "k0" || de.Details[99].Field != "k99" {
		t.Fatalf("%d details and %d more: %v ... %v", len(de.Details), de.More, de.Details[0], de.Details[len(de.Details)-1])
	}

	_, err = ParseInput([]byte(`{"zz": 1, "name": "n", "aa": 2, "kind": 3}`), time.UTC)
	if !errors.As(err, &de) || len(de.Details) != 3 || de.Details[0].Field != "aa" || de.Details[2].Field != "zz" {
		t.Fatalf("a few unknown fields: %v", err)
	}
}
