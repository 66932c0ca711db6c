package product

import (
	"maps"
	"strings"
)

// Key kinds: the fallback keys that find a product when an event or a
// sale row gives no product_id.
const (
	KeySKU = "sku"
	KeyEAN = "ean"
)

// LoadKey records a stored key: the product external_id holds the sku or
// ean value.
func (b *Book) LoadKey(kind, value, externalID string) { b.keys[kind+":"+value] = externalID }

// KeyChange is a key to store: the product external_id now holds it.
type KeyChange struct{ Kind, Value, ExternalID string }

// KeyChanges returns the keys set since loading, in the order first set.
func (b *Book) KeyChanges() []KeyChange {
	out := make([]KeyChange, 0, len(b.keyOrder))
	for _, k := range b.keyOrder {
		kind, value := splitKey(k)
		out = append(out, KeyChange{Kind: kind, Value: value, ExternalID: b.keys[k]})
	}
	return out
}

// Link finds the product an event or a sale row names, or creates it
// (interface: product linkage rules):
//
//  1. a product_id finds the product with that external_id;
//  2. without product_id, a sku then an ean finds the product that last
//     declared it (in a product import, or created from it);
//  3. a product found is never changed by the reference's details;
//  4. when nothing matches, a product is created from the details: with
//     the product_id as external_id, or a synthetic one, "sku:<sku>" or
//     "ean:<ean>", that a later import of the real product does not
//     match (it has its own external_id). It gets the company's currency
//     when the details name none, and no price when they give none: the
//     price rule is for catalogue imports, and refusing the event or
//     sale for a missing price would lose it.
//
// r must not be empty.
func (b *Book) Link(r Ref) Outcome {
	ext := r.ExternalID
	if ext == "" {
		key := r.Key()
		if ext = b.keys[key]; ext == "" {
			ext = key
		}
	}
	if s := b.products[ext]; s != nil {
		return Outcome{ProductID: s.ID, ExternalID: ext}
	}
	set := maps.Clone(r.Details)
	if set == nil {
		set = map[string]any{}
	}
	set[FieldExternalID] = ext
	if _, ok := set[FieldCurrency]; !ok {
		set[FieldCurrency] = b.currency
	}
	if r.SKU != "" {
		set["sku"] = r.SKU
	}
	if r.EAN != "" {
		if _, ok := set["ean"]; !ok {
			set["ean"] = r.EAN
		}
	}
	s := &State{ID: b.newID(), ExternalID: ext, Version: 1}
	if l, ok := set[FieldLanguage].(string); ok {
		s.Language = l
	}
	b.products[ext] = s
	b.declare(set, ext)
	return Outcome{ProductID: s.ID, ExternalID: ext,
		Event: &Upserted{ProductID: s.ID, ExternalID: ext, Created: true, Changes: Changes{Set: set}}}
}

// declare records the sku and eans a product's changes set as its keys:
// the product declaring a key last is the one it finds.
func (b *Book) declare(set map[string]any, externalID string) {
	if sku, ok := set["sku"].(string); ok && sku != "" {
		b.setKey(KeySKU+":"+sku, externalID)
	}
	var eans []string
	switch v := set["ean"].(type) {
	case string:
		eans = []string{v}
	case []string:
		eans = v
	}
	for _, ean := range eans {
		b.setKey(KeyEAN+":"+ean, externalID)
	}
}

func (b *Book) setKey(key, externalID string) {
	if b.keys[key] == externalID {
		return
	}
	b.keys[key] = externalID
	if !b.keySet[key] {
		b.keySet[key] = true
		b.keyOrder = append(b.keyOrder, key)
	}
}

func splitKey(k string) (kind, value string) {
	kind, value, _ = strings.Cut(k, ":")
	return kind, value
}
