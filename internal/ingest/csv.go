package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/clientele/clientele/domain/importing"
)

// csvRecords reads a CSV upload: a header line of property-path column
// names (see compileHeader), then one record per line. The delimiter is
// inferred from the header line. Every value is a string (the Importer
// coerces it); an empty cell is absent from the record, since CSV cannot
// tell "empty" from "not given" and absent is the harmless reading (an
// empty string would remove the stored value). A line with fewer cells
// than the header lacks the last ones; one with more is refused.
type csvRecords struct {
	in     io.Reader
	budget *budget
	entity importing.Entity

	r      *csv.Reader
	header *node
	cols   int
	index  int
}

func (c *csvRecords) Next(dst *bytes.Buffer) error {
	if c.r == nil {
		if err := c.start(); err != nil {
			return err
		}
	}
	c.budget.allow(c.r.InputOffset())
	row, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	if err != nil {
		return c.parseError(err)
	}
	line, _ := c.r.FieldPos(0)
	if len(row) > c.cols {
		return invalid("CSV line %d (record %d) has %d cells, the header %d", line, c.index, len(row), c.cols)
	}
	for _, v := range row {
		if !utf8.ValidString(v) {
			return invalid("CSV line %d (record %d) is not valid UTF-8; declare the charset (text/csv; charset=iso-8859-1 or utf-16)", line, c.index)
		}
	}
	c.index++
	if !c.header.encode(dst, row) {
		dst.WriteString("{}") // a line of empty cells is a record without fields
	}
	return nil
}

// start reads the header line.
func (c *csvRecords) start() error {
	br := bufio.NewReaderSize(c.in, 64<<10)
	comma := inferDelimiter(br)
	c.r = csv.NewReader(br)
	c.r.Comma = comma
	c.r.FieldsPerRecord = -1 // checked in Next, with a clearer message
	c.r.ReuseRecord = true
	names, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return invalid("the CSV body is empty: it needs a header line of column names")
	}
	if err != nil {
		return c.parseError(err)
	}
	for _, n := range names {
		if !utf8.ValidString(n) {
			return invalid("the CSV header is not valid UTF-8; declare the charset (text/csv; charset=iso-8859-1 or utf-16)")
		}
	}
	// ReuseRecord: the next Read overwrites names' backing array.
	names = append([]string(nil), names...)
	c.header, err = compileHeader(names, nestedRoots[c.entity])
	c.cols = len(names)
	return err
}

// parseError turns a CSV syntax error into the answer for the client;
// errors of the body itself (size limit, connection) pass through, as
// encoding/csv returns them.
func (c *csvRecords) parseError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return invalid("CSV line %d, column %d (record %d): %v", pe.Line, pe.Column, c.index, pe.Err)
	}
	return err
}

// inferDelimiter picks ",", ";" or tab: whichever occurs most often
// outside quotes in the header line (ties in that order; "," for a single
// column). It only peeks: the header is read again by the CSV reader.
func inferDelimiter(br *bufio.Reader) rune {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	counts := map[byte]int{}
	quoted := false
	for _, b := range head {
		switch {
		case b == '"':
			quoted = !quoted
		case !quoted && (b == ',' || b == ';' || b == '\t'):
			counts[b]++
		}
	}
	best := byte(',')
	for _, d := range []byte{';', '\t'} {
		if counts[d] > counts[best] {
			best = d
		}
	}
	return rune(best)
}
