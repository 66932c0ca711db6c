package product

import "maps"

// State is what the write side keeps of a product: enough to find it, to
// append to its stream and to tell its translations from its base record.
type State struct {
	ID, ExternalID string
	Version        int64
	// Language is the base record's language, "" when it has none.
	Language string
}

// Outcome is what one record does to its product.
type Outcome struct {
	ProductID string
	// ExternalID is the product's external_id (Link finds it from a sku or
	// an ean, or makes a synthetic one).
	ExternalID string
	// Event is the record's event, nil when the record changes nothing.
	Event *Upserted
}

// Book holds the products a chunk's records name, loaded before deciding
// and updated by each decision, so that a later record of the chunk sees
// what an earlier one did.
type Book struct {
	newID    func() string
	currency string
	products map[string]*State // by external_id
	keys     map[string]string // "sku:<sku>", "ean:<ean>" -> external_id
	keyOrder []string          // keys set since loading, in order
	keySet   map[string]bool
}

// NewBook returns an empty book; newID makes the ids of new products and
// currency is the company's default currency.
func NewBook(newID func() string, currency string) *Book {
	return &Book{newID: newID, currency: currency, products: map[string]*State{},
		keys: map[string]string{}, keySet: map[string]bool{}}
}

// Load adds a stored product.
func (b *Book) Load(s State) { b.products[s.ExternalID] = &s }

// Decide upserts by external_id. A new product needs a price and gets the
// company's currency when the record names none. A record of an existing
// product whose language differs from the product's language is a
// translation (localisation method A): its versionable fields become the
// version of its language; the base record keeps its own. A product
// without a language takes the first one it is given.
func (b *Book) Decide(r Record) (Outcome, error) {
	s := b.products[r.ExternalID]
	created := s == nil
	ch := r.Changes
	ch.Set = maps.Clone(ch.Set)
	switch {
	case created:
		if _, ok := ch.Set[FieldPrice]; !ok {
			return Outcome{}, &Problem{Field: FieldPrice, Reason: "price is required for a new product"}
		}
		if _, ok := ch.Set[FieldCurrency]; !ok {
			ch.Set[FieldCurrency] = b.currency
		}
		ch.Set[FieldExternalID] = r.ExternalID
		s = &State{ID: b.newID(), ExternalID: r.ExternalID, Language: r.Language}
		b.products[r.ExternalID] = s
	case r.Language != "" && s.Language != "" && r.Language != s.Language:
		ch = translation(r.Language, ch)
	default:
		if r.Language != "" {
			s.Language = r.Language
		}
		for _, f := range ch.Unset {
			if f == FieldLanguage {
				s.Language = ""
			}
		}
	}
	b.declare(ch.Set, r.ExternalID)
	o := Outcome{ProductID: s.ID, ExternalID: r.ExternalID}
	if len(ch.Set) == 0 && len(ch.Unset) == 0 && len(ch.Stock) == 0 && len(ch.Versions) == 0 {
		return o, nil
	}
	s.Version++
	o.Event = &Upserted{ProductID: s.ID, ExternalID: r.ExternalID, Created: created, Changes: ch}
	return o, nil
}

// translation moves the versionable base changes of a method A record
// into the version of its language, merged with any version the record
// also gives (method B); the rest (stock, is_deleted) stays on the base.
func translation(language string, ch Changes) Changes {
	out := Changes{Set: map[string]any{}, Stock: ch.Stock, Versions: map[string]map[string]FieldChanges{}}
	for dim, byKey := range ch.Versions {
		out.Versions[dim] = maps.Clone(byKey)
	}
	if out.Versions[VersionLanguage] == nil {
		out.Versions[VersionLanguage] = map[string]FieldChanges{}
	}
	v := out.Versions[VersionLanguage][language]
	v.Set = maps.Clone(v.Set)
	if v.Set == nil {
		v.Set = map[string]any{}
	}
	for f, val := range ch.Set {
		switch {
		case f == FieldLanguage:
		case versionable(f):
			v.Set[f] = val
		default:
			out.Set[f] = val
		}
	}
	for _, f := range ch.Unset {
		switch {
		case f == FieldLanguage:
		case versionable(f):
			v.Unset = append(v.Unset, f)
		default:
			out.Unset = append(out.Unset, f)
		}
	}
	out.Versions[VersionLanguage][language] = v
	return out
}

// Touched returns the products whose version changed since loaded (stream
// versions by product id), for the write side to save.
func (b *Book) Touched(loaded map[string]int64) []State {
	var out []State
	for _, s := range b.products {
		if v, ok := loaded[s.ID]; !ok || v != s.Version {
			out = append(out, *s)
		}
	}
	return out
}
