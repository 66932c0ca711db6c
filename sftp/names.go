package sftp

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// entities are the entities a file name may start with, in the order the
// error message names them.
var entities = []importing.Entity{importing.Customers, importing.Products, importing.Events, importing.Sales, importing.Shops}

// fileKind is what a file's name says about it.
type fileKind struct {
	entity importing.Entity
	format ingest.Format
	gzip   bool
}

// ignored reports whether a name is one that is never imported until it
// is renamed: hidden files and the temporary names of clients that
// upload under one name and rename when done.
func ignored(name string) bool {
	l := strings.ToLower(name)
	return strings.HasPrefix(name, ".") || strings.HasSuffix(l, ".tmp") || strings.HasSuffix(l, ".part")
}

// kindOf reads the entity from the name's prefix and the format from its
// extension, in any case: "Sales-2026-11-24.CSV.gz". The error says, for
// the failed/ directory, what the name lacks.
func kindOf(name string) (fileKind, error) {
	var k fileKind
	l := strings.ToLower(name)
	if rest, ok := strings.CutSuffix(l, ".gz"); ok {
		k.gzip, l = true, rest
	}
	switch {
	case strings.HasSuffix(l, ".csv"):
		k.format = ingest.CSV
	case strings.HasSuffix(l, ".json"):
		k.format = ingest.JSON
	}
	for _, e := range entities {
		if strings.HasPrefix(l, string(e)) {
			k.entity = e
			break
		}
	}
	var problems []string
	if k.entity == "" {
		problems = append(problems, fmt.Sprintf("start with what it holds (%s)", entityList()))
	}
	if k.format == "" {
		problems = append(problems, "end in .csv or .json (either optionally .gz)")
	}
	if problems != nil {
		return k, fmt.Errorf("%q cannot be imported: a file name must %s, e.g. sales-2026-11-24.csv", name, strings.Join(problems, " and "))
	}
	return k, nil
}

func entityList() string {
	s := make([]string, len(entities))
	for i, e := range entities {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// maxName bounds a file name, in bytes, as most file systems do.
const maxName = 255

// validName reports whether name can name a file of the tree: one path
// segment, not "." or "..", valid UTF-8 without control characters, and
// room for the ".result.json" beside it.
func validName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return errBadName
	case len(name) > maxName-len(".result.json")-8:
		return fmt.Errorf("%w: the name is too long", errBadName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: the name is not UTF-8", errBadName)
	case strings.ContainsAny(name, "/\\"):
		return errBadName
	}
	for _, r := range name {
		if unicode.IsControl(r) { // C0, DEL and C1
			return fmt.Errorf("%w: the name holds a control character", errBadName)
		}
	}
	return nil
}

// validID reports whether a company or job id read back from the disk
// can name a directory or file of the store: one path segment.
func validID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\\\x00")
}
