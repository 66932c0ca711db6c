package values

// A scan of JSON text that trusts its syntax (checked elsewhere, or not
// JSON at all) and reads each byte once: for walks that must stay
// bounded whatever the text holds, where decoding it would cost memory
// in proportion to it (a body's million unknown keys, a stored value
// nested thousands deep shown on a page).

// SkipSpace is the index of the first byte from raw[i] on that is not
// JSON whitespace, or len(raw).
func SkipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// StringEnd is the index after the JSON string that starts at raw[i]
// (after its closing quote), or len(raw) when it does not end.
func StringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// ValueEnd is the index after the JSON value that starts at raw[i]: a
// string, an array or object with everything in it, or a scalar, which
// ends at the next structural byte (Structural). It is len(raw) when the
// value does not end.
func ValueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return len(raw)
	}
	switch raw[i] {
	case '"':
		return StringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			case '"':
				j = StringEnd(raw, j) - 1
			}
		}
		return len(raw)
	}
	j := i + 1
	for j < len(raw) && !Structural(raw[j]) {
		j++
	}
	return j
}

// Structural reports whether c ends a scalar: whitespace, a bracket, a
// comma, a colon or a quote.
func Structural(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '{', '}', '[', ']', ',', ':', '"':
		return true
	}
	return false
}
