package customer

import (
	"maps"
	"slices"

	"github.com/clientele/clientele/domain/values"
)

// companyField keeps "<ShortName>__<name>" as sent. The prefix is matched
// without regard to case and stored as the company's short name, so that
// acme__size and ACME__size are one field. Any other key is no field of a
// customer: it is ignored (values.Ignored).
func (p *Parser) companyField(r *Record, key string, v any) error {
	field, ok := values.CompanyField(p.shortName, key)
	if !ok {
		r.Ignored.Ignore(key)
		return nil
	}
	c := &r.Changes
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
