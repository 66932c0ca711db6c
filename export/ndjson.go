package export

import (
	"bufio"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// ndjsonWriter writes a table's rows as NDJSON: one object a line, every
// column in the table's order, null when it has no value; timestamps in
// RFC 3339 (UTC), dates as YYYY-MM-DD, JSON columns as they are.
type ndjsonWriter struct {
	w    *bufio.Writer
	cols []Column
	keys [][]byte // each column's `"name":`
	buf  []byte
}

func newNDJSONWriter(out io.Writer, t Table) *ndjsonWriter {
	w := &ndjsonWriter{w: bufio.NewWriterSize(out, 1<<16), cols: t.Columns}
	for i, c := range t.Columns {
		var k []byte
		if i > 0 {
			k = append(k, ',')
		}
		k = appendString(k, c.Name)
		w.keys = append(w.keys, append(k, ':'))
	}
	return w
}

func (n *ndjsonWriter) write(row []value) error {
	b := append(n.buf[:0], '{')
	for i, v := range row {
		b = append(b, n.keys[i]...)
		switch {
		case v.null:
			b = append(b, "null"...)
		case n.cols[i].Kind == Integer:
			b = strconv.AppendInt(b, v.i, 10)
		case n.cols[i].Kind == Float:
			b = strconv.AppendFloat(b, v.f, 'g', -1, 64)
		case n.cols[i].Kind == Boolean:
			b = strconv.AppendBool(b, v.b)
		case n.cols[i].Kind == Timestamp:
			b = append(b, '"')
			b = v.t.AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		case n.cols[i].Kind == Date:
			b = append(b, '"')
			b = v.t.AppendFormat(b, dateLayout)
			b = append(b, '"')
		case n.cols[i].Kind == JSON:
			b = append(b, v.s...)
		default:
			b = appendString(b, string(v.s))
		}
	}
	b = append(b, '}', '\n')
	n.buf = b
	_, err := n.w.Write(b)
	return err
}

func (n *ndjsonWriter) close() error { return n.w.Flush() }

const hex = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
