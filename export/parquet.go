package export

import (
	"io"
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// rowGroupRows is how many rows a Parquet row group holds: the writer
// keeps one row group's pages in memory (compressed, mostly), so this
// bounds the memory of a file, and readers read a group at a time.
const rowGroupRows = 50_000

// writeBatch is how many rows are handed to the Parquet writer at once.
const writeBatch = 256

// parquetWriter writes a table's rows to a Parquet file, its columns in
// the table's order with their logical types, compressed with zstd.
type parquetWriter struct {
	w     *parquet.GenericWriter[any]
	cols  []Column
	batch []parquet.Row
}

func newParquetWriter(out io.Writer, t Table) *parquetWriter {
	schema := parquet.NewSchema(t.Name, orderedGroup(t.Columns))
	w := parquet.NewGenericWriter[any](out, schema,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.CreatedBy("clientele export", "", ""))
	return &parquetWriter{w: w, cols: t.Columns, batch: make([]parquet.Row, 0, writeBatch)}
}

// nodeOf is a column's Parquet node.
func nodeOf(c Column) parquet.Node {
	var n parquet.Node
	switch c.Kind {
	case Integer:
		n = parquet.Int(64)
	case Float:
		n = parquet.Leaf(parquet.DoubleType)
	case Boolean:
		n = parquet.Leaf(parquet.BooleanType)
	case Timestamp:
		n = parquet.Timestamp(parquet.Microsecond)
	case Date:
		n = parquet.Date()
	case JSON:
		n = parquet.JSON()
	default:
		n = parquet.String()
	}
	if c.Required {
		return parquet.Required(n)
	}
	return parquet.Optional(n)
}

func (p *parquetWriter) write(row []value) error {
	r := make(parquet.Row, len(row))
	for i, v := range row {
		def := 0
		if !p.cols[i].Required {
			def = 1
		}
		var pv parquet.Value
		switch {
		case v.null:
			pv, def = parquet.NullValue(), 0
		case p.cols[i].Kind == Integer:
			pv = parquet.Int64Value(v.i)
		case p.cols[i].Kind == Float:
			pv = parquet.DoubleValue(v.f)
		case p.cols[i].Kind == Boolean:
			pv = parquet.BooleanValue(v.b)
		case p.cols[i].Kind == Timestamp:
			pv = parquet.Int64Value(v.t.UnixMicro())
		case p.cols[i].Kind == Date:
			pv = parquet.Int32Value(int32(v.i))
		default:
			pv = parquet.ByteArrayValue(v.s)
		}
		r[i] = pv.Level(0, def, i)
	}
	p.batch = append(p.batch, r)
	if len(p.batch) == cap(p.batch) {
		return p.flush()
	}
	return nil
}

func (p *parquetWriter) flush() error {
	_, err := p.w.WriteRows(p.batch)
	clear(p.batch)
	p.batch = p.batch[:0]
	return err
}

func (p *parquetWriter) close() error {
	if err := p.flush(); err != nil {
		return err
	}
	return p.w.Close()
}

// group is a Parquet group whose fields keep the order they are given in
// (parquet.Group sorts them by name): the files' columns read in the
// order the tables list them.
type group struct {
	parquet.Group
	fields []parquet.Field
}

// field is a named node of a group.
type field struct {
	parquet.Node
	name string
}

func (f field) Name() string { return f.name }

// Value is not used: rows are written as parquet.Row, never as Go values.
func (f field) Value(reflect.Value) reflect.Value { return reflect.Value{} }

func orderedGroup(cols []Column) group {
	g := group{Group: parquet.Group{}}
	for _, c := range cols {
		n := nodeOf(c)
		g.Group[c.Name] = n
		g.fields = append(g.fields, field{Node: n, name: c.Name})
	}
	return g
}

func (g group) Fields() []parquet.Field { return g.fields }
