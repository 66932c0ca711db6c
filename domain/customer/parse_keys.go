package customer

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// companyField keeps "<ShortName>__<name>" as sent. The prefix is matched
// without regard to case and stored as the company's short name, so that
// acme__size and ACME__size are one field.
func (p *Parser) companyField(c *Changes, key string, v any) error {
	prefix, name, ok := strings.Cut(key, "__")
	if !ok || prefix == "" {
		return unknownField(key)
	}
	if !strings.EqualFold(prefix, p.shortName) {
		f := safeName(key)
		if f == "" {
			return unknownField(key)
		}
		return &Problem{Field: f, Reason: "unknown field " + f + ": company-specific fields are named " + p.shortName + "__<name>"}
	}
	if name == "" {
		return &Problem{Field: safeName(key), Reason: "a company-specific field needs a name after " + p.shortName + "__"}
	}
	field := p.shortName + "__" + name
	if values.Blank(v) {
		c.unset(field)
	} else {
		c.set(field, v)
	}
	return nil
}

func listOp(c *Changes, key, list string, add bool, v any) error {
	if values.Blank(v) {
		return nil
	}
	l, reason := values.StringList(v)
	if reason != "" {
		return &Problem{Field: key, Reason: reason}
	}
	if add {
		change(&c.Add, list, l)
	} else {
		change(&c.Remove, list, l)
	}
	return nil
}

func listOpObject(c *Changes, list string, obj map[string]any) error {
	for _, op := range slices.Sorted(maps.Keys(obj)) {
		v := obj[op]
		if op != "add" && op != "remove" {
			return &Problem{Field: list, Reason: "an object here may only have the keys add and remove"}
		}
		if v == nil {
			continue
		}
		if err := listOp(c, list+"."+op, list, op == "add", v); err != nil {
			return err
		}
	}
	return nil
}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// safeName returns a key fit to be quoted in a rejection. A key that does
// not look like a field name (a CSV file whose header line is a data row)
// may itself be personal data, and is not quoted.
func safeName(key string) string {
	if fieldNameRE.MatchString(key) {
		return key
	}
	return ""
}

func unknownField(key string) error {
	if f := safeName(key); f != "" {
		return &Problem{Field: f, Reason: "unknown field " + f}
	}
	return &Problem{Reason: "unknown field (its name is not shown: it does not look like a field name)"}
}
