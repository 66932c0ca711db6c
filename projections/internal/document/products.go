package document

import (
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/shop"
)

// productDefaults are the values retrieval shows for flags never set (or
// removed with ""), as the interface defines them.
var productDefaults = map[string]bool{
	product.FieldVisible:   true,
	product.FieldIsDeleted: false,
	product.FieldExclude:   true,
}

// ApplyProduct folds one event into a product's retrieval document.
func ApplyProduct(doc map[string]any, u product.Upserted) {
	ch := u.Changes
	applyFields(doc, ch.Set, ch.Unset)
	// The projector owns the identity: a change cannot rename it.
	doc[product.FieldExternalID] = u.ExternalID
	if len(ch.Stock) > 0 {
		doc[product.FieldStock] = mergeStock(doc[product.FieldStock], ch.Stock)
	}
	if len(ch.Versions) > 0 {
		versions, _ := doc[product.FieldVersions].(map[string]any)
		if versions == nil {
			versions = map[string]any{}
		}
		for dim, byKey := range ch.Versions {
			m, _ := versions[dim].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			for key, fc := range byKey {
				v, _ := m[key].(map[string]any)
				if v == nil {
					v = map[string]any{}
				}
				applyFields(v, fc.Set, fc.Unset)
				setOrDrop(m, key, v)
			}
			setOrDrop(versions, dim, m)
		}
		setOrDrop(doc, product.FieldVersions, versions)
	}
	for f, def := range productDefaults {
		if _, ok := doc[f]; !ok {
			doc[f] = def
		}
	}
}

// setOrDrop stores a nested object, or removes it when empty, so that a
// version whose fields are all removed disappears.
func setOrDrop(m map[string]any, key string, v map[string]any) {
	if len(v) == 0 {
		delete(m, key)
	} else {
		m[key] = v
	}
}

// mergeStock merges entries into the stored stock by shop_id: stored
// entries of other shops are kept in place, those of the same shop are
// overwritten, new shops are appended.
func mergeStock(stored any, entries []product.Stock) []any {
	list, _ := stored.([]any)
	out := append([]any{}, list...)
	for _, s := range entries {
		entry := map[string]any{"shop_id": s.ShopID, "quantity": s.Quantity}
		found := false
		for i, old := range out {
			if m, ok := old.(map[string]any); ok && m["shop_id"] == s.ShopID {
				out[i], found = entry, true
				break
			}
		}
		if !found {
			out = append(out, entry)
		}
	}
	return out
}

// ApplyShop folds one event into a shop's retrieval document.
func ApplyShop(doc map[string]any, u shop.Upserted) {
	applyFields(doc, u.Set, u.Unset)
	// The projector owns the identity: a change cannot rename it.
	doc[shop.FieldExternalID] = u.ExternalID
	if _, ok := doc[shop.FieldIsHidden]; !ok {
		doc[shop.FieldIsHidden] = false
	}
}
