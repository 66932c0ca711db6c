package ingest_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// entities are the upload entities a fuzz input picks from.
var entities = []importing.Entity{importing.Customers, importing.Products, importing.Events, importing.Sales, importing.Shops}

// FuzzCSVRecords checks the streamed CSV reader on any body: it fails
// only with a 400 or a 413; each record it gives is a JSON object on one
// line in UTF-8 whose values are non-empty strings (an empty cell is
// absent, and so is an object or list of empty cells). The same body in
// every accepted charset, and arriving a byte at a time, reads the same.
func FuzzCSVRecords(f *testing.F) {
	for _, s := range []string{
		"external_id,email\r\nA1,a@x.test\r\nA2,b@x.test\r\n", "external_id;first_name\nA1;Anna, Maria\n", "external_id\tcity\nA1\tTurku; Finland\n",
		"\"a,b\";c\n1;2\n", "a,b,c\n1,,3\n,,\n", "a,b\n\"x\ny\",\"say \"\"hi\"\"\"\n", "id,tags.0,tags.1,tags.2\n1,a,,c\n2,,,\n",
		"id,mailing_lists.add,mailing_lists.remove.0,COMPANY__x.y\n1,news,promo,z\n", "a\rb\r1\r2\r\n3\n", "\xEF\xBB\xBFa\nä\n",
		"a,b\n1,2,3\n", "a,,c\n", "tags,tags.0\nx,y\n", "tags.99999999\nx\n", "a\n\xe4\n",
	} {
		f.Add([]byte(s), uint8(0), uint8(0))
	}
	f.Add([]byte("product_id,stock.0.shop_id,stock.0.quantity,stock.1.shop_id,stock.1.quantity\n55,s1,1,,\n"), uint8(1), uint8(0))
	f.Add([]byte("product_id;versions.language.fi.title;versions.shop_id.7.price\n55;Kenkä;100\n"), uint8(1), uint8(0))
	f.Add([]byte("sale_external_id,sale_rows.0.product_id,sale_rows.1.product_id\nS1,p1,p2\n"), uint8(3), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, e, cs uint8) {
		entity := entities[int(e)%len(entities)]
		charset := []string{"", "utf-16le", "utf-16", "iso-8859-1"}[int(cs)%4]
		got, err := readAll(t, bytes.NewReader(body), ingest.CSV, charset, entity, ingest.Limits{})
		checkRead(t, body, got, err)
		if charset != "" {
			return
		}
		for _, r := range got {
			var v any
			if err := json.Unmarshal([]byte(r), &v); err != nil || !utf8.ValidString(r) {
				t.Fatalf("body %q gives the record %q, not JSON in UTF-8", body, r)
			}
			if m, ok := v.(map[string]any); !ok || len(m) > 0 && !filled(v) {
				t.Fatalf("body %q gives the record %q: not an object, or one with empty values", body, r)
			}
		}
		plain := bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
		if !utf8.Valid(plain) {
			return
		}
		for _, v := range variants(plain) {
			again, errAgain := readAll(t, bytes.NewReader(v.body), ingest.CSV, v.charset, entity, ingest.Limits{})
			sameRead(t, v.name, body, got, err, again, errAgain)
		}
		again, errAgain := readAll(t, iotest.OneByteReader(bytes.NewReader(body)), ingest.CSV, "", entity, ingest.Limits{})
		sameRead(t, "a byte at a time", body, got, err, again, errAgain)
	})
}

// filled reports whether v, a decoded record value, has only non-empty
// strings as leaves, and no empty object or list.
func filled(v any) bool {
	switch v := v.(type) {
	case string:
		return v != ""
	case []any:
		return len(v) > 0 && !slices.ContainsFunc(v, func(e any) bool { return !filled(e) })
	case map[string]any:
		for _, e := range v {
			if !filled(e) {
				return false
			}
		}
		return len(v) > 0
	}
	return false
}

// FuzzCSVTable checks the CSV reader on tables written by encoding/csv
// with any column names and cells, any delimiter, in any charset: every
// non-empty cell is a value of its line's record and every value is a
// cell (whatever the property paths of the columns); and where no column
// is a path, the records are the lines' cells by column name, and the same
// records sent as JSON read the same. Line breaks in cells are compared
// as LF: CSV readers, ours included, do not keep a CR of a line break.
func FuzzCSVTable(f *testing.F) {
	f.Add("external_id|email|first_name", "A1|a@x.test|Anna, Maria|A2||\"quoted\"\r\nline", uint8(0), uint8(0), uint8(0))
	f.Add("product_id|stock.0.shop_id|stock.0.quantity|stock.1.shop_id", "55|s1|1||56|s2||s3", uint8(1), uint8(1), uint8(1))
	f.Add("product_id|versions.language.fi.title|versions.shop_id.7.price|versions.language.en.tags.0", "55|Kenkä|100|x", uint8(2), uint8(3), uint8(1))
	f.Add("id|tags.0|tags.2|mailing_lists.add|ACME__x.y", "1|a|c|news|z|2|||| ", uint8(0), uint8(4), uint8(0))
	f.Add("a|a|b.0|b", "1|2|3|4", uint8(0), uint8(2), uint8(0))
	f.Fuzz(func(t *testing.T, header, cells string, delim, cs, e uint8) {
		names := strings.Split(header, "|")
		values := strings.Split(cells, "|")
		if len(names) > 50 || !utf8.ValidString(header) || !utf8.ValidString(cells) || slices.Contains(names, "") {
			return // a header the reader refuses, or a blank line it skips
		}
		for _, n := range names {
			if n != strings.TrimSpace(n) || strings.ContainsAny(n, "\",;\t\r\n\ufeff") {
				return // a name the writer would quote, or the header's delimiter inference would miscount
			}
		}
		entity := entities[int(e)%len(entities)]
		crlf := delim&4 != 0
		var rows [][]string
		for len(values) > 0 && len(rows) < 3 {
			row := make([]string, len(names))
			n := copy(row, values)
			values = values[n:]
			for i := range row {
				if crlf {
					row[i] = strings.ReplaceAll(row[i], "\r", "") // as the writer does
				}
			}
			if len(row) > 1 || row[0] != "" { // else a blank line, which is no record
				rows = append(rows, row)
			}
		}
		var plain bytes.Buffer
		w := csv.NewWriter(&plain)
		w.Comma = []rune{',', ';', '\t'}[int(delim)%3]
		if len(names) == 1 {
			w.Comma = ',' // what the reader takes when the header has no delimiter
		}
		w.UseCRLF = crlf
		_ = w.Write(names)
		_ = w.WriteAll(rows)
		body, charset := plain.Bytes(), ""
		if v := variants(body); int(cs)%(len(v)+1) > 0 {
			pick := v[int(cs)%(len(v)+1)-1]
			body, charset = pick.body, pick.charset
		}
		got, err := readAll(t, bytes.NewReader(body), ingest.CSV, charset, entity, ingest.Limits{})
		checkRead(t, body, got, err)
		paths := slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, ".") })
		duplicate := len(slices.Compact(slices.Sorted(slices.Values(names)))) < len(names)
		switch {
		case err != nil && !paths && !duplicate:
			t.Fatalf("table %q (charset %q) is refused: %v", plain.Bytes(), charset, err)
		case err != nil:
			return
		case len(got) != len(rows):
			t.Fatalf("table %q of %d lines gives %d records", plain.Bytes(), len(rows), len(got))
		}
		asJSON := []map[string]string{}
		for i, row := range rows {
			var rec any
			if err := json.Unmarshal([]byte(got[i]), &rec); err != nil {
				t.Fatal(err)
			}
			var want, have []string
			m := map[string]string{}
			for j, cell := range row {
				if cell != "" {
					want = append(want, lineBreaks(cell))
					m[names[j]] = cell
				}
			}
			leaves(rec, &have)
			slices.Sort(want)
			slices.Sort(have)
			if diff := cmp.Diff(want, have); diff != "" {
				t.Fatalf("table %q, line %d, gives %s (-cells +values):\n%s", plain.Bytes(), i+2, got[i], diff)
			}
			asJSON = append(asJSON, m)
		}
		if paths {
			return
		}
		list, _ := json.Marshal(asJSON)
		fromJSON, err := readAll(t, bytes.NewReader(list), ingest.JSON, "", entity, ingest.Limits{})
		if err != nil || len(fromJSON) != len(got) {
			t.Fatalf("table %q gives %d records, the same as JSON %d (%v)", plain.Bytes(), len(got), len(fromJSON), err)
		}
		for i := range got {
			a, b := cellsOf(t, got[i]), cellsOf(t, fromJSON[i])
			if diff := cmp.Diff(b, a); diff != "" {
				t.Fatalf("table %q, line %d: records (-as JSON +as CSV):\n%s", plain.Bytes(), i+2, diff)
			}
		}
	})
}

// cellsOf decodes a record of string values, line breaks as LF.
func cellsOf(t *testing.T, record string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(record), &m); err != nil {
		t.Fatalf("record %q: %v", record, err)
	}
	for k, v := range m {
		m[k] = lineBreaks(v)
	}
	return m
}

// lineBreaks writes every line break (CRLF, CR) as LF.
func lineBreaks(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// leaves appends the strings of a decoded record, line breaks as LF.
func leaves(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		*out = append(*out, lineBreaks(v))
	case []any:
		for _, e := range v {
			leaves(e, out)
		}
	case map[string]any:
		for _, e := range v {
			leaves(e, out)
		}
	}
}
