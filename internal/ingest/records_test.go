package ingest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// readAll reads every record of an upload of e, one string each, as the
// import pipeline does (imports.UploadShape), and returns a refusal of the
// body as the pipeline's error (imports.UploadError).
func readAll(t *testing.T, body io.Reader, f ingest.Format, charset string, e importing.Entity, lim ingest.Limits) ([]string, error) {
	t.Helper()
	recs, err := ingest.NewRecords(body, f, charset, imports.UploadShape(e), lim)
	if err != nil {
		return nil, imports.UploadError(err)
	}
	var out []string
	for {
		var buf bytes.Buffer
		err := recs.Next(&buf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, imports.UploadError(err)
		}
		if bytes.ContainsRune(buf.Bytes(), '\n') {
			t.Fatalf("record %q has a line break", buf.Bytes())
		}
		out = append(out, buf.String())
	}
}

func TestJSONRecords(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"bare list":        {`[{"id": 1}, {"id": "2", "x": [1, 2]}]`, []string{`{"id": 1}`, `{"id": "2", "x": [1, 2]}`}},
		"wrapped":          {`{"customers": [{"a":"b"}]}`, []string{`{"a":"b"}`}},
		"wrapped singular": {`{"customer": [{"a":"b"}]}`, []string{`{"a":"b"}`}},
		"empty list":       {` [ ] `, nil},
		"empty wrapped":    {`{"customers": []}`, nil},
		"line breaks":      {"[\n{\"a\":\n\"x\\ny\",\r\n \"b\": 1}\n]\n", []string{`{"a":"x\ny","b":1}`}},
		"utf-8 bom":        {"\xEF\xBB\xBF[{\"a\":\"é\"}]", []string{`{"a":"é"}`}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, strings.NewReader(tc.body), ingest.JSON, "", importing.Customers, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONRecordsInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		code domain.Code
		msg  string // part of the message
	}{
		"empty":           {``, domain.Invalid, "empty"},
		"not json":        {`customers`, domain.Invalid, "not valid JSON"},
		"object record":   {`{"external_id": "x"}`, domain.Invalid, `no "customers" list`},
		"other entity":    {`{"products": []}`, domain.Invalid, `no "customers" list`},
		"wrapped no list": {`{"customers": {"a": 1}}`, domain.Invalid, "must be a list"},
		"string top":      {`"x"`, domain.Invalid, "must be a JSON list"},
		"number record":   {`[{"a": 1}, 5]`, domain.Invalid, "record 1 is a number"},
		"list record":     {`[[1]]`, domain.Invalid, "record 0 is a list"},
		"null record":     {`[null]`, domain.Invalid, "record 0 is null"},
		"truncated":       {`[{"a": 1}, {"b": `, domain.Invalid, "ends in the middle"},
		"unclosed list":   {`[{"a": 1}`, domain.Invalid, "ends in the middle"},
		"bad syntax":      {`[{"a": 1}, {"b" 2}]`, domain.Invalid, "not valid JSON at byte"},
		"trailing value":  {`[] []`, domain.Invalid, "more after"},
		"extra key":       {`{"customers": [], "other": 1}`, domain.Invalid, "more after"},
		"invalid utf-8":   {"[{\"a\": \"\xff\"}]", domain.Invalid, "not valid UTF-8"},
		"record too big":  {`[{"a": "` + strings.Repeat("x", 300<<10) + `"}]`, domain.TooLarge, "over the limit"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readAll(t, strings.NewReader(tc.body), ingest.JSON, "", importing.Customers, ingest.Limits{MaxRecordBytes: 100 << 10})
			if domain.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestRecordTooLargeFailsEarly checks that a huge record is refused after
// about the limit, not after it was read whole.
func TestRecordTooLargeFailsEarly(t *testing.T) {
	body := &countingReader{r: io.MultiReader(strings.NewReader(`[{"a":"`), infinite('x'))}
	_, err := readAll(t, body, ingest.JSON, "", importing.Customers, ingest.Limits{MaxRecordBytes: 1 << 20})
	if domain.ErrorCode(err) != domain.TooLarge {
		t.Fatalf("error %v, want request_too_large", err)
	}
	if body.n > 2<<20 {
		t.Errorf("read %d bytes before refusing a record over 1 MiB", body.n)
	}
	body = &countingReader{r: io.MultiReader(strings.NewReader("a\n"), infinite('x'))}
	_, err = readAll(t, body, ingest.CSV, "", importing.Customers, ingest.Limits{MaxRecordBytes: 1 << 20})
	if domain.ErrorCode(err) != domain.TooLarge || body.n > 2<<20 {
		t.Errorf("CSV: error %v after %d bytes, want request_too_large after about 1 MiB", err, body.n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type infinite byte

func (b infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// utf16le encodes s as UTF-16LE with a byte order mark.
func utf16le(s string, bom bool) string {
	var out []byte
	if bom {
		out = append(out, 0xFF, 0xFE)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return string(out)
}

func utf16be(s string) string {
	var out []byte
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u>>8), byte(u))
	}
	return string(out)
}

// failingAfter reads body, then fails with err instead of its end.
type failingAfter struct {
	body io.Reader
	err  error
}

func (f *failingAfter) Read(p []byte) (int, error) {
	n, err := f.body.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// TestJSONRecordsReaderFailure: a reader that fails under the records (a
// database connection dropped while the credential was checked as the
// body ended: pgx's error wraps io.ErrUnexpectedEOF, and the read model
// types it as an outage) is that failure, not a body cut short: the
// client's upload was whole, and a 400 would tell it not to send it again.
func TestJSONRecordsReaderFailure(t *testing.T) {
	outage := fmt.Errorf("%w (%w)", domain.Errorf(domain.Unavailable, "the service cannot reach its database right now; retry later"),
		fmt.Errorf("unexpected EOF: %w", io.ErrUnexpectedEOF))
	for _, body := range []string{`[{"a": 1}, {"b": `, `[{"a": 1}]`} {
		_, err := readAll(t, &failingAfter{strings.NewReader(body), outage}, ingest.JSON, "", importing.Customers, ingest.Limits{})
		if domain.ErrorCode(err) != domain.Unavailable {
			t.Errorf("%s, then the reader's outage: %v, want the outage", body, err)
		}
	}
}
