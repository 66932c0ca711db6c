package imports

import (
	"cmp"
	"slices"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
)

// ignoredAt is an accepted record's ignored fields, by upload index.
type ignoredAt struct {
	index  int
	fields values.Ignored
}

// warnings counts the ignored fields of a chunk's accepted records: one
// Warning per field with the number of records that carried it and the
// first one's index, ordered by that index then field. It keeps the first
// importing.MaxWarnings fields found in upload order (the run keeps as
// many: Store.FinishChunk), so a chunk of records with endless odd
// keys costs no more than that; the fields it keeps are counted in every
// record.
func warnings(records []ignoredAt) []importing.Warning {
	if len(records) == 0 {
		return nil
	}
	// Importers accept in upload order but for sales, which accept a
	// transaction's records together.
	records = slices.SortedStableFunc(slices.Values(records), func(a, b ignoredAt) int { return cmp.Compare(a.index, b.index) })
	var out []importing.Warning
	at := map[string]int{} // field: index in out
	for _, r := range records {
		for _, f := range r.fields {
			if i, ok := at[f]; ok {
				out[i].Count++
				continue
			}
			if len(out) < importing.MaxWarnings {
				at[f] = len(out)
				out = append(out, importing.Warning{Field: f, Count: 1, FirstIndex: r.index})
			}
		}
	}
	// Found in index order, and each record's fields sorted: out is in
	// the order promised already.
	return out
}
