package shop

import "maps"

// State is what the write side keeps of a shop: enough to find it and to
// append to its stream.
type State struct {
	ID, ExternalID string
	Version        int64
}

// Outcome is what one record does to its shop.
type Outcome struct {
	ShopID  string
	Created bool
	// Event is the record's event, nil when the record changes nothing.
	Event *Upserted
}

// Book holds the shops a chunk's records name, loaded before deciding and
// updated by each decision, so that a later record of the chunk sees the
// shop an earlier one created.
type Book struct {
	newID func() string
	shops map[string]*State // by external_id
}

// NewBook returns an empty book; newID makes the ids of new shops.
func NewBook(newID func() string) *Book {
	return &Book{newID: newID, shops: map[string]*State{}}
}

// Load adds a stored shop.
func (b *Book) Load(s State) { b.shops[s.ExternalID] = &s }

// Decide upserts by external_id: an unknown one creates a shop, with
// is_hidden false unless the record says otherwise.
func (b *Book) Decide(r Record) Outcome {
	s := b.shops[r.ExternalID]
	created := s == nil
	if created {
		s = &State{ID: b.newID(), ExternalID: r.ExternalID}
		b.shops[r.ExternalID] = s
	}
	set := maps.Clone(r.Set)
	if created {
		set[FieldExternalID] = r.ExternalID
		if _, ok := set[FieldIsHidden]; !ok {
			set[FieldIsHidden] = false
		}
	}
	o := Outcome{ShopID: s.ID, Created: created}
	if len(set) == 0 && len(r.Unset) == 0 {
		return o
	}
	s.Version++
	o.Event = &Upserted{ShopID: s.ID, ExternalID: r.ExternalID, Created: created, Set: set, Unset: r.Unset}
	return o
}

// Touched returns the shops whose version changed, for the write side to
// save.
func (b *Book) Touched(loaded map[string]int64) []State {
	var out []State
	for _, s := range b.shops {
		if v, ok := loaded[s.ID]; !ok || v != s.Version {
			out = append(out, *s)
		}
	}
	return out
}
