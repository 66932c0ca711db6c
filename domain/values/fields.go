package values

import (
	"regexp"
	"slices"
	"strings"
)

var fieldNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// SafeName returns a record key fit to be quoted in a rejection, "" for
// one that does not look like a field name (a CSV file whose header line
// is a data row): such a key may itself be personal data.
func SafeName(key string) string {
	if fieldNameRE.MatchString(key) {
		return key
	}
	return ""
}

// UnknownField is the rejection of a key that is no field of the input,
// for inputs that refuse unknown keys (request bodies that configure the
// service); imported records ignore them instead (Ignored). The key is
// named only when it looks like a field name.
func UnknownField(key string) *Problem {
	if f := SafeName(key); f != "" {
		return &Problem{Field: f, Reason: "unknown field " + f}
	}
	return &Problem{Reason: "unknown field (its name is not shown: it does not look like a field name)"}
}

// Unknown fields never reject a record (decisions.md, Requests): shop
// plugins send fields of their own (store_id, mage_type, ...), and losing
// a whole customer or sale to one of them loses more than the field. So
// every entity's parser ignores a key that names no field of its entity,
// and a company field that is not the company's (CompanyField), and lists
// it on the record it returns (Ignored); the import run lists each such
// field once, with the number of imported records that carried it and the
// first one's index. A key that names a field but holds a bad value still
// rejects its record, naming the field.

// UnnamedField is the name an ignored key is listed under when it does
// not look like a field name (SafeName): such a key may be personal data
// (a CSV file whose header line is a data row), so it is never quoted,
// and every such key of an upload is one warning. SafeName refuses this
// name, so no real key is ever listed under it.
const UnnamedField = "(unnamed)"

// MaxIgnored bounds the names one record lists: as many as an import run
// lists at most (importing.MaxWarnings), so that a record alone may fill
// the run's list, and a record of a hundred thousand odd CSV columns
// costs no more than that.
const MaxIgnored = 1000

// Ignored is the names of the fields a parser ignored in one record,
// sorted, each once, at most MaxIgnored. A key of the record is listed as
// it is; a key of a nested object by its path with list indexes and the
// keys that are data (a language code, a shop id) left out, so that the
// same field of every sale row or every version is one name:
// "sale_rows.store_id", "versions.language.store_id", "stock.store_id".
// A name that does not look like a field name is listed as UnnamedField.
type Ignored []string

// Ignore adds name, the key or path of an ignored field, to ig. Names
// mostly come in sorted order (parsers read keys in order), so the insert
// is mostly an append.
func (ig *Ignored) Ignore(name string) {
	if SafeName(name) == "" {
		name = UnnamedField
	}
	i, found := slices.BinarySearch(*ig, name)
	if found || len(*ig) >= MaxIgnored {
		return
	}
	*ig = slices.Insert(*ig, i, name)
}

// CompanyField reads a company-specific key, "<shortName>__<name>" with
// the prefix in any case, and returns the field's stored name, prefixed
// with shortName as configured, so that acme__size and ACME__size are one
// field. ok is false for a key that is no field of the company: one
// without "__", one of another company and one without a name after the
// prefix; the parser ignores it as any unknown key.
func CompanyField(shortName, key string) (field string, ok bool) {
	prefix, name, ok := strings.Cut(key, "__")
	if !ok || prefix == "" || name == "" || !strings.EqualFold(prefix, shortName) {
		return "", false
	}
	return shortName + "__" + name, true
}
