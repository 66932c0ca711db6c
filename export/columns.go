package export

import (
	"time"

	"github.com/tidwall/gjson"
)

// Kind is the type of a column in the files: Parquet's logical type, and
// the JSON value NDJSON writes.
type Kind int

const (
	// Text is a UTF-8 string.
	Text Kind = iota
	// Integer is a 64-bit integer; money is one, in minor units.
	Integer
	// Float is a double (quantities).
	Float
	// Boolean is true or false.
	Boolean
	// Timestamp is an instant, in microseconds, adjusted to UTC.
	Timestamp
	// Date is a calendar date.
	Date
	// JSON is a JSON document (lists, objects, the whole row's document).
	JSON
)

// Column is one column of an exported read model. Its value comes either
// from SQL, an expression over the scratch table, or from Path, a gjson
// path into the row's document (Table.Doc); a value of another JSON type
// than Kind (a string where a number is expected) is null.
type Column struct {
	Name string
	Kind Kind
	// SQL is the expression selected; "" when Path gives the value.
	SQL string
	// Path is the gjson path in the document (used when SQL is "").
	Path string
	// Required columns are never null.
	Required bool
}

// value is one column's value of a row.
type value struct {
	null bool
	i    int64 // Integer, Date (days since 1970-01-01)
	f    float64
	b    bool
	t    time.Time
	s    []byte // Text, JSON
}

// dateLayout is how dates are written in documents (birth_date).
const dateLayout = "2006-01-02"

// fromJSON sets v from a document's member, null when it is absent or of
// another type than k.
func fromJSON(v *value, k Kind, r gjson.Result) {
	*v = value{null: true}
	switch k {
	case Text:
		if r.Type == gjson.String {
			*v = value{s: []byte(r.Str)}
		}
	case Integer:
		if r.Type == gjson.Number {
			if i := r.Int(); float64(i) == r.Num {
				*v = value{i: i}
			}
		}
	case Float:
		if r.Type == gjson.Number {
			*v = value{f: r.Num}
		}
	case Boolean:
		if r.Type == gjson.True || r.Type == gjson.False {
			*v = value{b: r.Bool()}
		}
	case Timestamp:
		if r.Type == gjson.String {
			if t, err := time.Parse(time.RFC3339Nano, r.Str); err == nil {
				*v = value{t: t.UTC()}
			}
		}
	case Date:
		if r.Type == gjson.String {
			if t, err := time.Parse(dateLayout, r.Str); err == nil {
				*v = value{i: t.Unix() / 86400, t: t}
			}
		}
	case JSON:
		if r.Exists() && r.Type != gjson.Null {
			*v = value{s: []byte(r.Raw)}
		}
	}
}
