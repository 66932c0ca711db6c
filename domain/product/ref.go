package product

import (
	"maps"
	"slices"

	"github.com/clientele/clientele/domain/values"
)

// Ref is how an event or a sale row names its product: by external_id,
// else by sku, else by ean (the first given is the one used), with the
// details to create the product from when none matches (interface:
// product linkage rules of events and sales).
type Ref struct {
	ExternalID string
	SKU        string
	EAN        string
	// Details are product fields in their product import names and
	// normalised forms (Parser.Details), copied to a product created from
	// the reference; an existing product is never changed by them.
	Details map[string]any
}

// Empty reports whether r names no product.
func (r Ref) Empty() bool { return r.ExternalID == "" && r.SKU == "" && r.EAN == "" }

// Key identifies what r names: "id:<external_id>", else "sku:<sku>", else
// "ean:<ean>"; "" when r is empty.
func (r Ref) Key() string {
	switch {
	case r.ExternalID != "":
		return "id:" + r.ExternalID
	case r.SKU != "":
		return "sku:" + r.SKU
	case r.EAN != "":
		return "ean:" + r.EAN
	}
	return ""
}

// Details validates product fields that an event or a sale row carries to
// describe its product (title, price, brand, ...), given in their product
// import names: each must be a product field (not external_id, stock or
// versions) with a valid value; null and blank values are left out. A
// *Problem names the product field at fault: callers rename it to the
// name their record used.
func (p *Parser) Details(m map[string]any) (map[string]any, error) {
	c := FieldChanges{Set: map[string]any{}}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		if v == nil || values.Blank(v) {
			continue
		}
		if key == FieldExternalID || key == FieldStock || key == FieldVersions {
			return nil, &Problem{Field: key, Reason: key + " cannot be given with an event or a sale"}
		}
		// The callers give product fields only, from their own field
		// tables: an unknown one is their bug, refused rather than lost.
		known, err := p.field(&c, key, v, true)
		if err != nil {
			return nil, err
		}
		if !known {
			return nil, &Problem{Field: values.SafeName(key), Reason: "is no field of a product"}
		}
	}
	return c.Set, nil
}
