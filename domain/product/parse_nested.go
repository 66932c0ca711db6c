package product

import (
	"maps"
	"slices"
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// versions validates {"language": {<code>: {fields}}, "shop_id": {<id>:
// {fields}}}; either key may be missing, both may be given. Any other key
// is ignored, as "versions.<key>", and so is a key of a version that is
// no field of a product, as "versions.<dimension>.<key>": without the
// language code or shop id, so that a plugin's field of every version is
// one warning.
func (p *Parser) versions(ig *values.Ignored, v any) (map[string]map[string]FieldChanges, error) {
	const reason = `must be an object {"language": {<code>: {...}}, "shop_id": {<shop id>: {...}}}`
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &Problem{Field: FieldVersions, Reason: reason}
	}
	out := map[string]map[string]FieldChanges{}
	for _, dim := range slices.Sorted(maps.Keys(obj)) {
		if dim != VersionLanguage && dim != VersionShop {
			if obj[dim] != nil {
				ig.Ignore(FieldVersions + "." + dim)
			}
			continue
		}
		byKey, ok := obj[dim].(map[string]any)
		if obj[dim] == nil {
			continue
		}
		if !ok {
			return nil, &Problem{Field: FieldVersions + "." + dim, Reason: reason}
		}
		for _, key := range slices.Sorted(maps.Keys(byKey)) {
			name := strings.TrimSpace(key)
			if dim == VersionLanguage {
				l, r := lang(key)
				if r != "" {
					return nil, &Problem{Field: FieldVersions + "." + dim, Reason: "keys " + r}
				}
				name = l.(string)
			}
			if err := p.version(ig, out, dim, name, byKey[key]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// version validates the fields of one version into out[dim][key].
func (p *Parser) version(ig *values.Ignored, out map[string]map[string]FieldChanges, dim, key string, v any) error {
	path := FieldVersions + "." + dim + "." + key
	fields, ok := v.(map[string]any)
	if v == nil {
		return nil
	}
	if !ok || key == "" {
		return &Problem{Field: safeField(path), Reason: "must be an object of product fields"}
	}
	if out[dim] == nil {
		out[dim] = map[string]FieldChanges{}
	}
	c := out[dim][key]
	if c.Set == nil {
		c.Set = map[string]any{}
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if fields[f] == nil {
			continue
		}
		known, err := p.field(&c, f, fields[f], false)
		if err != nil {
			if prob, ok := err.(*Problem); ok && prob.Field != "" {
				prob.Field = safeField(path + "." + prob.Field)
			}
			return err
		}
		if !known {
			ig.Ignore(FieldVersions + "." + dim + "." + f)
		}
	}
	out[dim][key] = c
	return nil
}

// stock validates a list of {shop_id, quantity}; within a record, the last
// entry of a shop wins. Any other key of an entry is ignored, as
// "stock.<key>".
func stock(ig *values.Ignored, v any) ([]Stock, error) {
	const reason = "must be a list of objects {shop_id, quantity}"
	l, ok := v.([]any)
	if !ok {
		return nil, &Problem{Field: FieldStock, Reason: reason}
	}
	var out []Stock
	for _, e := range l {
		obj, ok := e.(map[string]any)
		if e == nil {
			continue
		}
		if !ok {
			return nil, &Problem{Field: FieldStock, Reason: reason}
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if k != "shop_id" && k != "quantity" && obj[k] != nil {
				ig.Ignore(FieldStock + "." + k)
			}
		}
		id, ok := values.Scalar(obj["shop_id"])
		q, reason := number(obj["quantity"])
		if !ok || strings.TrimSpace(id) == "" {
			return nil, &Problem{Field: FieldStock, Reason: "every entry needs a shop_id"}
		}
		if reason != "" {
			return nil, &Problem{Field: FieldStock, Reason: "quantity " + reason}
		}
		s := Stock{ShopID: strings.TrimSpace(id), Quantity: q.(float64)}
		if i := slices.IndexFunc(out, func(o Stock) bool { return o.ShopID == s.ShopID }); i >= 0 {
			out[i] = s
		} else {
			out = append(out, s)
		}
	}
	return out, nil
}

// safeField returns a field path fit to be quoted in a rejection: a shop
// id is the client's identifier, never personal, but a path must still
// look like one.
func safeField(path string) string {
	if values.SafeName(path) != "" {
		return path
	}
	return FieldVersions
}
