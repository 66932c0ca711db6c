package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/values"
)

// Input is what a request body gives for a campaign (POST creates one,
// PATCH changes one). A nil field is not given: absent, or null, which
// the service reads as absent everywhere. "" removes what can be removed.
type Input struct {
	// Key is the campaign_key; on creation, nil or "" has one generated.
	Key  *string
	Kind *Kind
	Name *string
	// State asks for a transition (or, on creation, for one from draft).
	State *State
	// UTMCampaign "" removes it.
	UTMCampaign *string
	Tags        *[]Tag
	// Folder is the folder given; NoFolder is "folder": "" (out of any).
	Folder   *Folder
	NoFolder bool
	// Permission is permissions.marketing_permission; "" goes back to the
	// kind's default.
	Permission *string
	ProductIDs *[]string
	// ActivatedAt is taken with the move from draft to active, so that a
	// campaign's history can be imported; it is now otherwise.
	ActivatedAt *time.Time

	// Read-only fields of the answer: a body may send them back
	// unchanged (an answer edited and sent as a PATCH), nothing more.
	Automated *bool
	CreatedAt *time.Time

	// problems are the values of the right type that break a rule
	// (a datetime that is none), reported with the decision's own.
	problems []domain.FieldError
}

// Body fields. stats is read-only and computed: a body may carry it (an
// answer sent back) and it is ignored.
const (
	fieldKey         = "campaign_key"
	fieldKind        = "kind"
	fieldName        = "name"
	fieldState       = "state"
	fieldUTMCampaign = "utm_campaign"
	fieldTags        = "campaign_tags"
	fieldFolder      = "folder"
	fieldPermissions = "permissions"
	fieldPermission  = "permissions.marketing_permission"
	fieldProductIDs  = "product_ids"
	fieldActivatedAt = "activated_at"
	fieldAutomated   = "automated"
	fieldCreatedAt   = "created_at"
	fieldUpdatedAt   = "updated_at"
	fieldStats       = "stats"
)

// ParseInput reads a request body, a JSON object, for a company whose
// naive datetimes are in loc. Values are read as loosely as imports read
// them (an identifier sent as a number is its text). An unknown field, or
// a value of the wrong JSON type, is a 400 naming each such field: this
// API is the service's own, and a field silently dropped (a misspelt
// "stat": "active") would answer 200 for a change never made. Values of
// the right type that break a rule are the decision's 422 (New, Change),
// reported together with its own problems.
func ParseInput(raw []byte, loc *time.Location) (Input, error) {
	if err := unknownFlood(raw); err != nil {
		return Input{}, err
	}
	m, field, reason := values.DecodeRecord(raw)
	switch {
	case reason == "":
	case field != "":
		return Input{}, &domain.Error{Code: domain.Invalid, Message: "the request body holds a value no store can hold",
			Details: []domain.FieldError{{Field: field, Reason: reason}}}
	case isObject(raw):
		// In a key, or under one that does not look like a field name
		// (values.SafeName): the reason without the field.
		return Input{}, &domain.Error{Code: domain.Invalid, Message: "the request body holds a value no store can hold: it " + reason}
	default:
		return Input{}, &domain.Error{Code: domain.Invalid, Message: "the request body must be a JSON object (a campaign)"}
	}
	var r reader
	in := r.input(m, loc)
	if err := r.shape.Err(domain.Invalid, "the campaign has unknown fields or values of the wrong type"); err != nil {
		return Input{}, err
	}
	in.problems = r.rules
	return in, nil
}

// unknownFlood refuses a body of more unknown fields at its top level
// than an answer lists (domain.MaxDetails) from a walk of its keys,
// before it is decoded: the answer is then decided (400, the first
// unknown fields and how many more), and decoding a million keys into a
// map would cost a hundred times the body's size in memory for nothing.
// The walk reads each byte once and keeps nothing but the problems it
// lists. Any other body is nil: ParseInput reads it whole.
func unknownFlood(raw []byte) error {
	i := values.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	var r reader
	for i++; ; i++ {
		i = values.SkipSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			break // "}": the end of the object, whose keys are walked
		}
		end := values.StringEnd(raw, i)
		key := raw[i+1 : max(i+1, end-1)]
		switch {
		case knownFields[string(key)]:
		case r.shape.Full():
			r.shape.Add("", "") // only counted
		case bytes.IndexByte(key, '\\') >= 0:
			var k string
			_ = json.Unmarshal(raw[i:end], &k)
			if !knownFields[k] {
				r.unknown("", k)
			}
		default:
			r.unknown("", string(key))
		}
		i = values.SkipSpace(raw, end) + 1 // the colon
		i = values.SkipSpace(raw, values.ValueEnd(raw, values.SkipSpace(raw, i)))
		if i >= len(raw) || raw[i] != ',' {
			break
		}
	}
	// The walk trusts the syntax, which the API has checked as it read
	// the body (decodeJSON): text that is no JSON may be refused for its
	// fields rather than its syntax, never accepted.
	if r.shape.Len() <= domain.MaxDetails {
		return nil
	}
	return r.shape.Err(domain.Invalid, "the campaign has unknown fields or values of the wrong type")
}

// knownFields are the fields of a body (ParseInput), read-only ones
// included.
var knownFields = map[string]bool{
	fieldKey: true, fieldKind: true, fieldName: true, fieldState: true, fieldUTMCampaign: true, fieldTags: true,
	fieldFolder: true, fieldPermissions: true, fieldProductIDs: true, fieldActivatedAt: true, fieldAutomated: true,
	fieldCreatedAt: true, fieldUpdatedAt: true, fieldStats: true,
}

// isObject reports whether raw is JSON text of an object (of any content).
func isObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(raw)
}

// reader collects the problems of a body as it reads it: shape (the
// wrong JSON type, an unknown field: 400; as many as the body holds,
// of which the first domain.MaxDetails are kept) and rules (422; at most
// one a field).
type reader struct {
	shape domain.Problems
	rules []domain.FieldError
}

func (r *reader) bad(field, reason string) { r.shape.Add(field, reason) }

func (r *reader) rule(field, reason string) {
	r.rules = append(r.rules, domain.FieldError{Field: field, Reason: reason})
}

// unknown reports a key that is no field of the object at path ("" at
// the top); a key that does not look like a field name is not quoted.
func (r *reader) unknown(path, key string) {
	name := values.SafeName(key)
	switch {
	case name == "":
		r.bad(path, "unknown field (its name is not shown: it does not look like a field name)")
	case path == "":
		r.bad(name, "unknown field")
	default:
		r.bad(path+"."+name, "unknown field")
	}
}

func (r *reader) input(m map[string]any, loc *time.Location) Input {
	var in Input
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		if v == nil {
			continue
		}
		switch key {
		case fieldKey:
			if s := r.text(v, key); s != nil {
				k := strings.TrimSpace(*s)
				in.Key = &k
			}
		case fieldKind:
			if s := r.str(v, key); s != nil {
				k := Kind(*s)
				in.Kind = &k
			}
		case fieldName:
			in.Name = r.text(v, key)
		case fieldState:
			if s := r.str(v, key); s != nil {
				st := State(*s)
				in.State = &st
			}
		case fieldUTMCampaign:
			in.UTMCampaign = r.text(v, key)
		case fieldTags:
			in.Tags = r.tags(v)
		case fieldFolder:
			if values.Blank(v) {
				in.NoFolder = true
			} else {
				in.Folder = r.folder(v)
			}
		case fieldPermissions:
			in.Permission = r.permission(v)
		case fieldProductIDs:
			ids := []string{}
			if !values.Blank(v) {
				var reason string
				if ids, reason = values.StringList(v); reason != "" {
					r.bad(key, "must be a list of strings")
					continue
				}
			}
			in.ProductIDs = &ids
		case fieldActivatedAt:
			in.ActivatedAt = r.datetime(v, key, loc)
		case fieldCreatedAt:
			in.CreatedAt = r.datetime(v, key, loc)
		case fieldAutomated:
			if b, reason := values.Bool(v); reason == "" {
				in.Automated = &b
			} else {
				r.bad(key, reason)
			}
		case fieldStats, fieldUpdatedAt:
			// Computed, and moves on its own: sent back, it says nothing.
		default:
			r.unknown("", key)
		}
	}
	return in
}

// str reads a string.
func (r *reader) str(v any, field string) *string {
	s, ok := v.(string)
	if !ok {
		r.bad(field, "must be a string")
		return nil
	}
	return &s
}

// text reads a string, or a number as its text.
func (r *reader) text(v any, field string) *string {
	s, reason := values.Text(v)
	if reason != "" {
		r.bad(field, reason)
		return nil
	}
	return &s
}

// datetime reads a datetime in any of the forms imports accept; a string
// that is none breaks a rule (422), as in imports.
func (r *reader) datetime(v any, field string, loc *time.Location) *time.Time {
	if _, ok := v.(string); !ok {
		r.bad(field, "must be a string")
		return nil
	}
	s, reason := values.DateTime(v, loc)
	if reason != "" {
		r.rule(field, reason)
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.rule(field, "must be a datetime")
		return nil
	}
	return &t
}

// tags reads [{id, label}, ...]; "" is no tags.
func (r *reader) tags(v any) *[]Tag {
	out := []Tag{}
	if values.Blank(v) {
		return &out
	}
	list, ok := v.([]any)
	if !ok {
		r.bad(fieldTags, "must be a list of {id, label} objects")
		return nil
	}
	before := r.shape.Len()
	for i, e := range list {
		at := fmt.Sprintf("%s[%d]", fieldTags, i)
		obj, ok := e.(map[string]any)
		if !ok {
			r.bad(at, "must be an {id, label} object")
			continue
		}
		var t Tag
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			switch v := obj[k]; {
			case v == nil:
			case k == "id":
				if s := r.text(v, at+".id"); s != nil {
					t.ID = *s
				}
			case k == "label":
				if s := r.text(v, at+".label"); s != nil {
					t.Label = *s
				}
			default:
				r.unknown(at, k)
			}
		}
		out = append(out, t)
	}
	if r.shape.Len() > before {
		return nil
	}
	return &out
}

// folder reads {id, name}; id is a whole number (or its text).
func (r *reader) folder(v any) *Folder {
	obj, ok := v.(map[string]any)
	if !ok {
		r.bad(fieldFolder, "must be an {id, name} object")
		return nil
	}
	var f Folder
	before, hasID := r.shape.Len(), false
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch v := obj[k]; {
		case v == nil:
		case k == "id":
			s, ok := values.Scalar(v)
			id, err := json.Number(s).Int64()
			if !ok || err != nil || id < 0 {
				r.bad(fieldFolder+".id", "must be a whole number, 0 or more")
			}
			f.ID, hasID = id, true
		case k == "name":
			if s := r.text(v, fieldFolder+".name"); s != nil {
				f.Name = *s
			}
		default:
			r.unknown(fieldFolder, k)
		}
	}
	if r.shape.Len() > before {
		return nil
	}
	if !hasID {
		r.rule(fieldFolder+".id", "required")
		return nil
	}
	return &f
}

// permission reads {marketing_permission}: "" (the object or the
// permission) goes back to the kind's default; null and {} give nothing.
func (r *reader) permission(v any) *string {
	none := ""
	if values.Blank(v) {
		return &none
	}
	obj, ok := v.(map[string]any)
	if !ok {
		r.bad(fieldPermissions, "must be a {marketing_permission} object")
		return nil
	}
	var out *string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch v := obj[k]; {
		case v == nil:
		case k == "marketing_permission":
			out = r.str(v, fieldPermission)
		default:
			r.unknown(fieldPermissions, k)
			return nil
		}
	}
	return out
}

// GivenKey returns the campaign_key the body gives, trimmed, and whether
// it gives one: on creation, a body without one (or with "") has one
// generated.
func (in Input) GivenKey() (string, bool) {
	if in.Key == nil || *in.Key == "" {
		return "", false
	}
	return *in.Key, true
}
