package sale

import "slices"

// State returns the state of a sale in the book, and false when the book
// has none (a new sale).
func (b *Book) State(externalID string) (State, bool) {
	s := b.sales[externalID]
	if s == nil {
		return State{}, false
	}
	return *s, true
}

// Restore puts back the state a sale had before a decision the write
// side could not carry out (its customer refused the sale): before, or no
// sale at all when existed is false.
func (b *Book) Restore(externalID string, before State, existed bool) {
	s := b.sales[externalID]
	if s == nil {
		return
	}
	if existed {
		*s = before
		return
	}
	delete(b.sales, externalID)
	b.touched = slices.DeleteFunc(b.touched, func(t *State) bool { return t == s })
}
