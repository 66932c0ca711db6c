package ingest_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// FuzzJSONRecords checks the streamed JSON reader on any body: it fails
// only with a 400 or a 413; each record it gives is a JSON object on one
// line in UTF-8 (a line of a staged chunk's payload); and it reads exactly
// what encoding/json reads: a bare list of objects whole, a wrapped list
// as given, nothing from a body that is not UTF-8. The same body in every
// accepted charset, and arriving a byte at a time, reads the same.
func FuzzJSONRecords(f *testing.F) {
	for _, s := range []string{
		`[{"id": 1}, {"id": "2", "x": [1, 2]}]`, `{"customers": [{"a":"b"}]}`, `{"customer": [{"a":"b"}]}`, ` [ ] `,
		"[\n{\"a\":\n\"x\\ny\",\r\n \"b\": 1}\n]\n", "\xEF\xBB\xBF[{\"a\":\"é€\"}]", `[{"a": 1}, 5]`, `{"customers": [], "other": 1}`,
		`[{"a": 1}] []`, `[] 1e700`, "[{\"a\": \"\xff\"}]", `[{"a": "\u0000\ud800", "b": 1e400}]`, `{"customers": [{}], "customers": [{}]}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, cs uint8) {
		charset := []string{"", "utf-8", "UTF-16", "utf-16le", "utf-16be", "iso-8859-1", "latin1"}[int(cs)%7]
		got, err := readAll(t, bytes.NewReader(body), ingest.JSON, charset, importing.Customers, ingest.Limits{})
		checkRead(t, body, got, err)
		if charset != "" {
			return
		}
		for _, r := range got {
			if r == "" || r[0] != '{' || !json.Valid([]byte(r)) || !utf8.ValidString(r) {
				t.Fatalf("body %q gives the record %q", body, r)
			}
		}
		if bytes.HasPrefix(body, []byte{0xFF, 0xFE}) || bytes.HasPrefix(body, []byte{0xFE, 0xFF}) {
			return // UTF-16 by its byte order mark: the variants below check it
		}
		plain := bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
		if !utf8.Valid(plain) {
			if err == nil {
				t.Fatalf("body %q is not UTF-8, but its records %q are read", body, got)
			}
			return
		}
		var list []json.RawMessage
		isList := json.Unmarshal(plain, &list) == nil && allObjects(list)
		switch {
		case isList && err != nil:
			t.Fatalf("body %q is a list of objects, but is refused: %v", body, err)
		case isList:
			sameRecords(t, body, list, got)
		case err == nil:
			var wrapped map[string][]json.RawMessage
			_ = json.Unmarshal(plain, &wrapped)
			recs, ok := wrapped["customers"]
			if !ok {
				recs, ok = wrapped["customer"]
			}
			if len(wrapped) != 1 || !ok || !allObjects(recs) {
				t.Fatalf("body %q is neither a list of objects nor one wrapped, but its records %q are read", body, got)
			}
			sameRecords(t, body, recs, got)
		}
		for _, v := range variants(plain) {
			again, errAgain := readAll(t, bytes.NewReader(v.body), ingest.JSON, v.charset, importing.Customers, ingest.Limits{})
			sameRead(t, v.name, body, got, err, again, errAgain)
		}
		again, errAgain := readAll(t, iotest.OneByteReader(bytes.NewReader(body)), ingest.JSON, "", importing.Customers, ingest.Limits{})
		sameRead(t, "a byte at a time", body, got, err, again, errAgain)
	})
}

// checkRead checks what any read of any body gives: a 400 or a 413, or
// records on one line each (readAll checks that).
func checkRead(t *testing.T, body []byte, got []string, err error) {
	t.Helper()
	if err != nil {
		if c := domain.ErrorCode(err); c != domain.Invalid && c != domain.TooLarge {
			t.Fatalf("body %q is refused with %v, want invalid_request or request_too_large", body, err)
		}
	}
}

func allObjects(l []json.RawMessage) bool {
	for _, r := range l {
		if len(r) == 0 || r[0] != '{' {
			return false
		}
	}
	return l != nil
}

// sameRecords fails t unless got are the records want, compacted.
func sameRecords(t *testing.T, body []byte, want []json.RawMessage, got []string) {
	t.Helper()
	compact := func(r []byte) string {
		var b bytes.Buffer
		if err := json.Compact(&b, r); err != nil {
			t.Fatalf("compact %q: %v", r, err)
		}
		return b.String()
	}
	var w, g []string
	for _, r := range want {
		w = append(w, compact(r))
	}
	for _, r := range got {
		g = append(g, compact([]byte(r)))
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Fatalf("body %q: records (-encoding/json +reader):\n%s", body, diff)
	}
}

// sameRead fails t unless a second read of body (how says how) gives what
// the first gave: the same records, or a refusal with the same code.
func sameRead(t *testing.T, how string, body []byte, got []string, err error, again []string, errAgain error) {
	t.Helper()
	if domain.ErrorCode(err) != domain.ErrorCode(errAgain) {
		t.Fatalf("body %q: %v, but %s: %v", body, err, how, errAgain)
	}
	if err == nil {
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("body %q, %s: records (-first +again):\n%s", body, how, diff)
		}
	}
}

// variant is a UTF-8 body in another accepted charset, with the charset
// parameter that declares it (or its byte order mark).
type variant struct {
	name, charset string
	body          []byte
}

var (
	utf16LE = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	utf16BE = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
)

// variants returns plain, valid UTF-8 without a byte order mark, in the
// charsets of the API: UTF-8 with a BOM, UTF-16 either way with and
// without a BOM (a BOM wins over the parameter), and windows-1252 (what
// iso-8859-1 means) when plain has only its characters. A body whose
// first character reads as a BOM in a charset is left out of it.
func variants(plain []byte) []variant {
	boms := [][]byte{{0xEF, 0xBB, 0xBF}, {0xFF, 0xFE}, {0xFE, 0xFF}}
	startsWithBOM := func(b []byte) bool {
		for _, bom := range boms {
			if bytes.HasPrefix(b, bom) {
				return true
			}
		}
		return false
	}
	le, _ := utf16LE.NewEncoder().Bytes(plain)
	be, _ := utf16BE.NewEncoder().Bytes(plain)
	out := []variant{{"utf-8 with a BOM", "", append([]byte{0xEF, 0xBB, 0xBF}, plain...)}}
	if !startsWithBOM(le) && !startsWithBOM(be) {
		out = append(out,
			variant{"utf-16le with a BOM", "", append([]byte{0xFF, 0xFE}, le...)},
			variant{"utf-16le", "utf-16le", le},
			variant{"utf-16be with a BOM, declared utf-16le", "utf-16le", append([]byte{0xFE, 0xFF}, be...)},
			variant{"utf-16 (big-endian)", "utf-16", be},
		)
	}
	if w, err := charmap.Windows1252.NewEncoder().Bytes(plain); err == nil && !startsWithBOM(w) && !startsWithBOM(plain) {
		out = append(out, variant{"iso-8859-1", "ISO-8859-1", w})
	}
	return out
}
