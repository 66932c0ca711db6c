package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"unicode/utf8"

	"golang.org/x/text/transform"
)

// csvRecords reads a CSV upload: a header line of property-path column
// names (see compileHeader), then one record per line. The delimiter is
// inferred from the header line. Every value is a string (the Importer
// coerces it); an empty cell is absent from the record, since CSV cannot
// tell "empty" from "not given" and absent is the harmless reading (an
// empty string would remove the stored value). A line with fewer cells
// than the header lacks the last ones; one with more is refused. Lines
// may end in LF, CRLF or a lone CR, mixed in one file (see lineEnds).
type csvRecords struct {
	in     io.Reader
	budget *budget
	nested map[string]int // Shape.Nested

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
	br := bufio.NewReaderSize(transform.NewReader(c.in, lineEnds{}), 64<<10)
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
	c.header, err = compileHeader(names, c.nested)
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

// lineEnds turns every CR that is not followed by LF into LF. encoding/csv
// ends records at LF only (it drops the CR of CRLF) and keeps a lone CR as
// text, so a file with the line ends of classic Mac OS, which old Excel
// versions still write, would read as one header line of a thousand
// columns and no record. The translation ignores quotes: a line break in
// a quoted cell then reads as LF, as encoding/csv already reads a CRLF
// there. A CR is its own line end only when no LF follows, so CR at the
// end of a buffer waits for the next byte; each byte stays one byte, so
// the CSV reader's offsets (line numbers, the record budget) are those of
// the body.
type lineEnds struct{ transform.NopResetter }

// Transform implements transform.Transformer.
func (lineEnds) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		i := bytes.IndexByte(src[nSrc:], '\r')
		if i < 0 {
			i = len(src) - nSrc
		}
		n := copy(dst[nDst:], src[nSrc:nSrc+i])
		nDst, nSrc = nDst+n, nSrc+n
		switch {
		case n < i || nDst == len(dst) && nSrc < len(src):
			return nDst, nSrc, transform.ErrShortDst
		case nSrc == len(src):
			return nDst, nSrc, nil
		case nSrc+1 == len(src) && !atEOF:
			return nDst, nSrc, transform.ErrShortSrc // is an LF next?
		case nSrc+1 < len(src) && src[nSrc+1] == '\n':
			dst[nDst] = '\r'
		default:
			dst[nDst] = '\n'
		}
		nDst, nSrc = nDst+1, nSrc+1
	}
	return nDst, nSrc, nil
}
