package ingest

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

type kind int

const (
	leaf kind = iota
	object
	list
)

// node is the shape of a record, compiled once from the CSV header: every
// line fills the same tree with its cells.
type node struct {
	kind     kind
	col      int      // leaf: the column of the value
	keys     []string // object: the keys, in header order
	indexes  []int    // list: the element indexes, in order
	children []*node  // object: one per key; list: one per index
	name     string   // the column that made the node, for conflict messages
}

// step is one segment of a column's path: an object key or a list index.
type step struct {
	key   string
	index int // -1 for a key
}

// compileHeader builds the record tree of a CSV header; nested are the
// fields whose columns address nested objects (Shape.Nested).
func compileHeader(names []string, nested map[string]int) (*node, error) {
	if strings.TrimSpace(strings.Join(names, "")) == "" {
		return nil, invalid("the CSV header line has no column names")
	}
	root := &node{kind: object}
	for i, raw := range names {
		name := strings.TrimSpace(raw)
		if name == "" {
			return nil, invalid("column %d of the CSV header has no name", i+1)
		}
		path, err := columnPath(name, nested)
		if err != nil {
			return nil, err
		}
		if err := root.insert(path, i, name); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// columnPath splits a column name into its path.
func columnPath(name string, nested map[string]int) ([]step, error) {
	segs := strings.Split(name, ".")
	start := len(segs) // where the structured part begins
	keys := 0          // how many segments from start are keys, numeric or not
	if depth, ok := nested[segs[0]]; ok {
		start, keys = 1, depth
	} else {
		for i := 1; i < len(segs); i++ {
			if isIndex(segs[i]) {
				start = i
				break
			}
		}
	}
	path := []step{{key: strings.Join(segs[:start], "."), index: -1}}
	for i, s := range segs[start:] {
		switch {
		case s == "":
			return nil, invalid("CSV column %q has an empty path segment", name)
		case i >= keys && isIndex(s):
			n, err := strconv.Atoi(s)
			if err != nil || n > 1_000_000 {
				return nil, invalid("CSV column %q has a list index out of range", name)
			}
			path = append(path, step{index: n})
		default:
			path = append(path, step{key: s, index: -1})
		}
	}
	return path, nil
}

func isIndex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// insert adds the column col at path below n, an object or a list.
func (n *node) insert(path []step, col int, name string) error {
	want := leaf
	if len(path) > 1 {
		want = object
		if path[1].index >= 0 {
			want = list
		}
	}
	var child *node
	if n.kind == object {
		if i := slices.Index(n.keys, path[0].key); i >= 0 {
			child = n.children[i]
		} else {
			child = &node{kind: want, col: col, name: name}
			n.keys = append(n.keys, path[0].key)
			n.children = append(n.children, child)
		}
	} else {
		i, found := slices.BinarySearch(n.indexes, path[0].index)
		if found {
			child = n.children[i]
		} else {
			child = &node{kind: want, col: col, name: name}
			n.indexes = slices.Insert(n.indexes, i, path[0].index)
			n.children = slices.Insert(n.children, i, child)
		}
	}
	if child.kind != want || (want == leaf && child.col != col) {
		return invalid("CSV columns %q and %q both set the same field", child.name, name)
	}
	if want == leaf {
		return nil
	}
	return child.insert(path[1:], col, name)
}

// encode writes the node's value for row to dst and reports whether it
// wrote anything: empty cells, and objects and lists with nothing in
// them, are left out.
func (n *node) encode(dst *bytes.Buffer, row []string) bool {
	if n.kind == leaf {
		if n.col >= len(row) || row[n.col] == "" {
			return false
		}
		writeString(dst, row[n.col])
		return true
	}
	open, end := byte('{'), byte('}')
	if n.kind == list {
		open, end = '[', ']'
	}
	start := dst.Len()
	dst.WriteByte(open)
	wrote := false
	for i, child := range n.children {
		mark := dst.Len()
		if wrote {
			dst.WriteByte(',')
		}
		if n.kind == object {
			writeString(dst, n.keys[i])
			dst.WriteByte(':')
		}
		if child.encode(dst, row) {
			wrote = true
		} else {
			dst.Truncate(mark)
		}
	}
	if !wrote {
		dst.Truncate(start)
		return false
	}
	dst.WriteByte(end)
	return true
}

const hexDigits = "0123456789abcdef"

// writeString writes s, valid UTF-8, as a JSON string.
func writeString(dst *bytes.Buffer, s string) {
	dst.WriteByte('"')
	last := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst.WriteString(s[last:i])
		switch b {
		case '"', '\\':
			dst.WriteByte('\\')
			dst.WriteByte(b)
		case '\n':
			dst.WriteString(`\n`)
		case '\r':
			dst.WriteString(`\r`)
		case '\t':
			dst.WriteString(`\t`)
		default:
			dst.WriteString(`\u00`)
			dst.WriteByte(hexDigits[b>>4])
			dst.WriteByte(hexDigits[b&0xF])
		}
		last = i + 1
	}
	dst.WriteString(s[last:])
	dst.WriteByte('"')
}
