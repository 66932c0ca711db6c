package sale

import "strconv"

// Transaction is the records of one sale_external_id within a chunk, in
// upload order, with the keys of their rows. Book.Decide combines them:
// their transaction fields (a later record's value wins) and their rows.
type Transaction struct {
	ExternalID string
	Records    []Record
	// Keys are the row keys: Keys[i][j] is the key of Records[i].Rows[j].
	Keys [][]string
}

// Merge combines the records of one sale_external_id in upload order
// (rejections name a record by its index in records). It computes the row
// keys (Row.Key): "id:<external_id>" for a row that has one, else
// "product:<product ref key>#<n>", n counting from 0 the rows without
// external_id that name the same product the same way, across the
// records in order. So an upload that sends the same rows again gives
// them the same keys, and replaces them. Merge panics when the records
// are not of one sale_external_id: grouping them is the caller's job.
func Merge(records []Record) Transaction {
	t := Transaction{Records: records, Keys: make([][]string, len(records))}
	if len(records) > 0 {
		t.ExternalID = records[0].ExternalID
	}
	seen := map[string]int{}
	for i, r := range records {
		if r.ExternalID != t.ExternalID {
			panic("sale.Merge: records of more than one sale_external_id")
		}
		t.Keys[i] = make([]string, len(r.Rows))
		for j, row := range r.Rows {
			if id, ok := row.Fields[RowExternalID].(string); ok {
				t.Keys[i][j] = "id:" + id
				continue
			}
			ref := row.Product.Key()
			t.Keys[i][j] = "product:" + ref + "#" + strconv.Itoa(seen[ref])
			seen[ref]++
		}
	}
	return t
}
