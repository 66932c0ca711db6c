package console

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/clientele/clientele/domain/values"
)

// Every stored value a page shows (a datatarget's messages, an outlet's
// content template and raw attempts, a customer's fields and history) goes
// through the renderer here, whatever was stored: it shows at most
// shownDepth levels of nesting, shownValueBytes of one value and
// shownPageBytes of all the values of one page, and its cost is linear in
// the bytes it reads, which are at most the value's own. What it leaves
// out is marked (Cut), and the page links to the whole value instead.
//
// json.Indent, which the pages used before, writes the indentation of
// every level on every line: a message nested 10,000 levels deep (20 KB,
// which the API accepts) became 200 MB of page.
const (
	// shownDepth is the nesting shown; deeper arrays and objects show as
	// [...] and {...}.
	shownDepth = 16
	// shownValueBytes bounds the text of one value.
	shownValueBytes = 8 << 10
	// shownCellBytes bounds the text of one cell of a list or table.
	shownCellBytes = 512
	// shownPageBytes bounds the text of all the stored values of a page.
	shownPageBytes = 128 << 10
)

// shownText is a stored value as a page shows it.
type shownText struct {
	Text string
	// Cut is true when Text leaves part of the value out.
	Cut bool
}

// budget is what one page has left to show of stored values.
type budget struct {
	left int
	// cut is true once a value of the page is not shown whole.
	cut bool
}

func newBudget() *budget { return &budget{left: shownPageBytes} }

// take returns how many bytes a value may take, at most limit, and
// whether the page still shows any.
func (b *budget) take(limit int) int { return max(0, min(limit, b.left)) }

func (b *budget) spend(s shownText) shownText {
	b.left -= len(s.Text)
	b.cut = b.cut || s.Cut
	return s
}

// json shows JSON text indented for reading, within limit bytes and the
// page's budget; text that is not JSON is shown as text.
func (b *budget) json(raw []byte, limit int) shownText {
	if !json.Valid(raw) {
		return b.text(string(raw), limit)
	}
	s, cut, _ := indentBounded(raw, b.take(limit))
	return b.spend(shownText{Text: s, Cut: cut})
}

// text shows text within limit bytes and the page's budget.
func (b *budget) text(s string, limit int) shownText {
	t, cut := cutText(s, b.take(limit))
	return b.spend(shownText{Text: t, Cut: cut})
}

// cell shows a field's value in a cell: text as itself, a list as its
// items joined by ", ", anything else as compact JSON; within
// shownCellBytes and the page's budget.
func (b *budget) cell(v any) shownText {
	w := boundedWriter{limit: b.take(shownCellBytes)}
	writeCell(&w, v)
	return b.spend(shownText{Text: w.b.String(), Cut: w.full})
}

func writeCell(w *boundedWriter, v any) {
	switch v := v.(type) {
	case nil:
	case string:
		w.writeString(v)
	case []any:
		for i, e := range v {
			if w.full {
				return
			}
			if i > 0 {
				w.writeString(", ")
			}
			writeCell(w, e)
		}
	case []string:
		for i, e := range v {
			if w.full {
				return
			}
			if i > 0 {
				w.writeString(", ")
			}
			w.writeString(e)
		}
	case json.Number:
		w.writeString(v.String())
	default:
		// A number, a boolean or an object of a document (decodeDoc):
		// compact JSON, as the API answers it, indented no deeper than
		// any JSON a page shows.
		raw, err := json.Marshal(v)
		if err != nil {
			return
		}
		s, cut, _ := indentBounded(raw, w.limit-w.b.Len())
		w.writeString(s)
		w.full = w.full || cut
	}
}

// cutText is s, or its first bytes up to limit on a character's boundary
// followed by "…" when it is longer.
func cutText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	if limit < len(ellipsis) {
		return "", true
	}
	n := limit - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis, true
}

const ellipsis = "…"

// boundedWriter collects at most limit bytes; what does not fit is cut
// (full), ending the text with an ellipsis.
type boundedWriter struct {
	b     strings.Builder
	limit int
	full  bool
}

func (w *boundedWriter) writeString(s string) {
	if w.full {
		return
	}
	if w.b.Len()+len(s) <= w.limit-len(ellipsis) {
		w.b.WriteString(s)
		return
	}
	w.full = true
	if w.b.Len()+len(ellipsis) > w.limit {
		return // no room even for the ellipsis: the budget is spent
	}
	n := max(0, min(len(s), w.limit-len(ellipsis)-w.b.Len()))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	w.b.WriteString(s[:n])
	w.b.WriteString(ellipsis)
	w.full = true
}

func (w *boundedWriter) writeByte(c byte) {
	if w.full {
		return
	}
	if w.b.Len()+1 > w.limit-len(ellipsis) {
		w.writeString(string(c))
		return
	}
	w.b.WriteByte(c)
}

// newline starts a line indented for depth levels (at most shownDepth:
// deeper values are never written).
func (w *boundedWriter) newline(depth int) {
	w.writeByte('\n')
	w.writeString(strings.Repeat("  ", min(depth, shownDepth)))
}

// readableString is the JSON string literal s (quotes included) with its
// \u escapes of printable characters written as the characters
// ("\u00c4kk\u00f6nen" is shown "Ääkkönen", a surrogate pair as its one
// character) and "\/" as "/": the same string to a JSON reader, as a
// person reads it. Escapes of what a person cannot see or that JSON needs
// escaped (control and format characters such as U+202E, the quote, the
// backslash, a lone surrogate) stay as they are, as does a malformed
// escape. It reads each byte once.
func readableString(s []byte) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '/':
			b.WriteByte('/')
			i++
			continue
		case 'u':
			r, n := unicodeEscape(s[i:])
			if n > 0 && r != '"' && r != '\\' && unicode.IsPrint(r) {
				b.WriteRune(r)
				i += n - 1
				continue
			}
		}
		// Any other escape is kept whole: its two bytes.
		b.WriteByte(c)
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

// unicodeEscape reads the \uXXXX escape at the start of s, with the
// low half that follows a high surrogate: the character and the bytes
// read, or n 0 when it is not one whole character.
func unicodeEscape(s []byte) (r rune, n int) {
	hex4 := func(s []byte) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	lo, ok := hex4(s[6:])
	if !ok {
		return 0, 0
	}
	if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
		return pair, 12
	}
	return 0, 0
}

// indentBounded writes JSON text raw indented by two spaces a level, as
// json.Indent does, its strings readable (readableString), but at most limit bytes (an ellipsis ends a text cut
// short) and shownDepth levels deep: a deeper array or object is written
// [...] or {...}. cut reports whether anything was left out. It reads
// each byte of raw at most once and stops when the text is full: steps,
// the bytes it read, is at most len(raw). Text that is not JSON gives
// text of the same bounds.
func indentBounded(raw []byte, limit int) (text string, cut bool, steps int) {
	w := boundedWriter{limit: limit}
	if len(ellipsis) > limit {
		return "", len(raw) > 0, 0
	}
	depth := 0
	// pending is true when the next value starts a line: after an
	// opening bracket or a comma.
	// opened is true right after an opening bracket, so that an empty
	// array or object is written [] or {}.
	pending, opened := false, false
	i := 0
	for i < len(raw) && !w.full {
		c := raw[i]
		switch c {
		case ' ', '\t', '\r', '\n':
			i++
			continue
		case '{', '[':
			if pending {
				w.newline(depth)
			}
			if depth >= shownDepth {
				end := values.ValueEnd(raw, i)
				w.writeByte(c)
				w.writeString("...")
				w.writeByte(closing(c))
				i, cut, pending, opened = end, true, false, false
				continue
			}
			w.writeByte(c)
			depth++
			i++
			pending, opened = true, true
			continue
		case '}', ']':
			depth = max(0, depth-1)
			if !opened {
				w.newline(depth)
			}
			w.writeByte(c)
			i++
		case ',':
			w.writeByte(c)
			i++
			pending, opened = true, false
			continue
		case ':':
			w.writeString(": ")
			i++
		case '"':
			if pending {
				w.newline(depth)
			}
			end := values.StringEnd(raw, i)
			w.writeString(readableString(raw[i:end]))
			i = end
		default:
			if pending {
				w.newline(depth)
			}
			end := values.ValueEnd(raw, i)
			w.writeString(string(raw[i:end]))
			i = end
		}
		pending, opened = false, false
	}
	return w.b.String(), cut || w.full, i
}

func closing(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}
