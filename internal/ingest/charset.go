package ingest

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// ParseContentType returns the format and the charset parameter of an
// upload's Content-Type. JSON is application/json, text/json or any
// +json type, and also an absent Content-Type (some clients send none);
// CSV is text/csv, application/csv or text/comma-separated-values.
// Anything else is refused rather than guessed.
func ParseContentType(contentType string) (Format, string, error) {
	if strings.TrimSpace(contentType) == "" {
		return JSON, "", nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", "", invalid("the Content-Type %q is malformed: %v", contentType, err)
	}
	switch {
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
		return JSON, params["charset"], nil
	case mt == "text/csv" || mt == "application/csv" || mt == "text/comma-separated-values":
		return CSV, params["charset"], nil
	}
	return "", "", invalid("uploads are JSON (Content-Type: application/json) or CSV (Content-Type: text/csv), not %s", mt)
}

// decoders maps the accepted charset names to their decoders; nil means
// UTF-8 (the default). "iso-8859-1" is read as windows-1252, its superset,
// as the WHATWG encoding standard (and every browser) does: files labelled
// Latin-1 are in practice exported by Windows programs, and the two differ
// only in 0x80-0x9F, where Latin-1 has invisible control characters and
// windows-1252 has the euro sign and typographic quotes.
var decoders = map[string]encoding.Encoding{
	"":             nil,
	"utf-8":        nil,
	"utf8":         nil,
	"us-ascii":     nil,
	"utf-16":       unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), // RFC 2781: big-endian without a BOM
	"utf-16be":     unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"utf-16le":     unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM),
	"iso-8859-1":   charmap.Windows1252,
	"iso8859-1":    charmap.Windows1252,
	"iso_8859-1":   charmap.Windows1252,
	"latin1":       charmap.Windows1252,
	"latin-1":      charmap.Windows1252,
	"windows-1252": charmap.Windows1252,
	"cp1252":       charmap.Windows1252,
}

// Byte order marks. A BOM decides the encoding whatever the charset
// parameter says (as in the WHATWG standard): it is the stronger evidence.
var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// toUTF8 returns r decoded from charset (or its byte order mark) to UTF-8,
// without the byte order mark.
func toUTF8(r io.Reader, charset string) (io.Reader, error) {
	enc, ok := decoders[strings.ToLower(strings.TrimSpace(charset))]
	if !ok {
		return nil, invalid("unknown charset %q: send utf-8, utf-16 or iso-8859-1", charset)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(3) // a shorter body has no BOM; read errors show later
	switch {
	case bytes.HasPrefix(head, bomUTF8):
		_, _ = br.Discard(3)
		enc = nil
	case bytes.HasPrefix(head, bomUTF16LE):
		_, _ = br.Discard(2)
		enc = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	case bytes.HasPrefix(head, bomUTF16BE):
		_, _ = br.Discard(2)
		enc = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	}
	if enc == nil {
		return br, nil
	}
	return transform.NewReader(br, enc.NewDecoder()), nil
}
