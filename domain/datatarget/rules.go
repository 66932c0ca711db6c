package datatarget

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/clientele/clientele/domain"
)

// Lengths, in characters.
const (
	maxName        = 200
	maxDescription = 2000
)

func checkName(name string) []domain.FieldError {
	switch {
	case name == "":
		return []domain.FieldError{{Field: "name", Reason: "required"}}
	case utf8.RuneCountInString(name) > maxName:
		return []domain.FieldError{{Field: "name", Reason: "too long"}}
	}
	return nil
}

func checkDescription(d string) []domain.FieldError {
	if utf8.RuneCountInString(d) > maxDescription {
		return []domain.FieldError{{Field: "description", Reason: "too long"}}
	}
	return nil
}

// Field limits: generous for any entity's fields, company fields included,
// and small enough to keep a datatarget's settings row small.
const (
	maxFields     = 500
	maxFieldBytes = 200
)

// checkSettings validates and normalises the settings of a datatarget of
// typ: fields trimmed, without duplicates (first occurrence kept), and an
// empty list meaning every field.
func checkSettings(typ Type, s Settings) (Settings, []domain.FieldError) {
	if typ != Datasync {
		if !s.IsZero() {
			return s, []domain.FieldError{{Field: "datatype", Reason: "datatype, fields, from_start and segment_key are for datasync datatargets only"}}
		}
		return s, nil
	}
	var problems []domain.FieldError
	switch {
	case s.Datatype == "":
		problems = append(problems, domain.FieldError{Field: "datatype", Reason: "required"})
	case !isKnown(s.Datatype):
		problems = append(problems, domain.FieldError{Field: "datatype", Reason: "must be customers, products, events, sales, shops, campaigns or segment"})
	case !s.Datatype.Available():
		problems = append(problems, domain.FieldError{Field: "datatype", Reason: fmt.Sprintf("datasync of %s is not available yet", s.Datatype)})
	}
	switch {
	case s.Datatype == Segment && s.SegmentKey == "":
		problems = append(problems, domain.FieldError{Field: "segment_key", Reason: "required for datatype segment"})
	case s.Datatype != Segment && s.SegmentKey != "":
		problems = append(problems, domain.FieldError{Field: "segment_key", Reason: "only for datatype segment"})
	}
	if len(s.Fields) > maxFields {
		return s, append(problems, domain.FieldError{Field: "fields", Reason: fmt.Sprintf("at most %d fields", maxFields)})
	}
	var fields []string
	seen := map[string]bool{}
	for i, f := range s.Fields {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || len(f) > maxFieldBytes || !utf8.ValidString(f):
			problems = append(problems, domain.FieldError{Field: fmt.Sprintf("fields[%d]", i), Reason: "must be a field name"})
		case !seen[f]:
			seen[f] = true
			fields = append(fields, f)
		}
	}
	s.Fields = fields
	return s, problems
}

// checkSegment checks that the segment a datatarget of datatype segment
// follows exists; exists asks the company's segments.
func checkSegment(key string, exists func(string) (bool, error)) ([]domain.FieldError, error) {
	if exists == nil {
		return nil, fmt.Errorf("datatarget: the segments of the company cannot be asked")
	}
	ok, err := exists(key)
	if err != nil || ok {
		return nil, err
	}
	return []domain.FieldError{{Field: "segment_key", Reason: fmt.Sprintf("no segment %s", key)}}, nil
}
