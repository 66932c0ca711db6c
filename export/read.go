package export

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/tidwall/gjson"

	"github.com/clientele/clientele/projections"
)

// progressEvery is how many rows pass between two reports of progress.
const progressEvery = 10_000

// readTable streams the rows of t from its scratch copy to each, in one
// query (pgx reads the rows off the wire as they are asked for: none is
// held but the current one), reporting the rows read now and then.
func readTable(ctx context.Context, scratch *projections.Scratch, t Table, companyID string, each func([]value) error, progress func(int64)) (int64, error) {
	var exprs []string
	var sqlIdx, docIdx []int // the columns of each source, in t.Columns
	docField := map[string]int{}
	whole := -1
	for i, c := range t.Columns {
		switch {
		case c.SQL != "" && c.Kind == JSON:
			exprs = append(exprs, "("+c.SQL+")::text")
			sqlIdx = append(sqlIdx, i)
		case c.SQL != "":
			exprs = append(exprs, c.SQL)
			sqlIdx = append(sqlIdx, i)
		case c.Path == "@this":
			whole = i
		default:
			docIdx = append(docIdx, i)
			docField[c.Path] = i
		}
	}
	if t.Doc != "" {
		exprs = append(exprs, "("+t.Doc+")::text")
	}
	rows, err := scratch.Query(ctx, "SELECT "+strings.Join(exprs, ", ")+" "+t.From(scratch.Table(t.Source)), companyID)
	if err != nil {
		return 0, err
	}
	defer rows.Close()

	texts := make([]pgtype.Text, len(t.Columns))
	ints := make([]pgtype.Int8, len(t.Columns))
	bools := make([]pgtype.Bool, len(t.Columns))
	times := make([]pgtype.Timestamptz, len(t.Columns))
	dest := make([]any, len(exprs))
	for j, i := range sqlIdx {
		switch t.Columns[i].Kind {
		case Integer:
			dest[j] = &ints[i]
		case Boolean:
			dest[j] = &bools[i]
		case Timestamp:
			dest[j] = &times[i]
		default:
			dest[j] = &texts[i]
		}
	}
	row := make([]value, len(t.Columns))
	var n int64
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return n, err
		}
		for _, i := range sqlIdx {
			v := &row[i]
			switch t.Columns[i].Kind {
			case Integer:
				*v = value{null: !ints[i].Valid, i: ints[i].Int64}
			case Boolean:
				*v = value{null: !bools[i].Valid, b: bools[i].Bool}
			case Timestamp:
				*v = value{null: !times[i].Valid, t: times[i].Time.UTC()}
			default:
				*v = value{null: !texts[i].Valid, s: []byte(texts[i].String)}
			}
		}
		if t.Doc != "" {
			// The document's text, valid until the next row: copied once,
			// and the values slice it.
			doc := []byte(string(rows.RawValues()[len(exprs)-1]))
			for _, i := range docIdx {
				row[i] = value{null: true}
			}
			gjson.ParseBytes(doc).ForEach(func(k, v gjson.Result) bool {
				if i, ok := docField[k.Str]; ok {
					fromJSON(&row[i], t.Columns[i].Kind, v)
				}
				return true
			})
			if whole >= 0 {
				row[whole] = value{s: doc}
			}
		}
		if err := each(row); err != nil {
			return n, err
		}
		if n++; n%progressEvery == 0 {
			progress(n)
		}
	}
	return n, rows.Err()
}
