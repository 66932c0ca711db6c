package values

import (
	"regexp"
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

// UnknownField is the rejection of a key that is no field of the entity;
// the key is named only when it looks like a field name.
func UnknownField(key string) *Problem {
	if f := SafeName(key); f != "" {
		return &Problem{Field: f, Reason: "unknown field " + f}
	}
	return &Problem{Reason: "unknown field (its name is not shown: it does not look like a field name)"}
}

// CompanyField checks a company-specific key, "<shortName>__<name>" with
// the prefix in any case, and returns the field's stored name, prefixed
// with shortName as configured, so that acme__size and ACME__size are one
// field. reportAs is the name rejections give the key (the key itself, or
// its path in a nested record). A key of another company, one without a
// name, and one that is no company field at all are rejected.
func CompanyField(shortName, key, reportAs string) (string, error) {
	prefix, name, ok := strings.Cut(key, "__")
	if !ok || prefix == "" {
		return "", UnknownField(reportAs)
	}
	if !strings.EqualFold(prefix, shortName) {
		f := SafeName(reportAs)
		if f == "" {
			return "", UnknownField(reportAs)
		}
		return "", &Problem{Field: f, Reason: "unknown field " + f + ": company-specific fields are named " + shortName + "__<name>"}
	}
	if name == "" {
		return "", &Problem{Field: SafeName(reportAs), Reason: "a company-specific field needs a name after " + shortName + "__"}
	}
	return shortName + "__" + name, nil
}
