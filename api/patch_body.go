package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/values"
)

// decodePatch decodes the body of a PATCH, a JSON object, into v, a
// pointer to a flat struct whose json tags name every key the route
// takes. A key that names none of them is a 400 naming it
// (values.UnknownField), as the campaigns' reader answers for its own
// (campaign.ParseInput): a change silently dropped ({"enabled": false}
// to a route that takes no enabled) would answer 200 for a change never
// made. Keys are matched as written, not in any case as encoding/json
// matches them.
func decodePatch(r *http.Request, v any) error {
	var raw json.RawMessage
	if err := decodeJSON(r, &raw, false); err != nil {
		return err
	}
	if err := onlyKeysOf(raw, v); err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// onlyKeysOf refuses raw, a JSON object, when it has a key that none of
// the json tags of v (a pointer to a flat struct) names: a 400 naming
// each such key, matched as written.
func onlyKeysOf(raw json.RawMessage, v any) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return domain.Errorf(domain.Invalid, "the request body must be a JSON object")
	}
	known := jsonKeys(reflect.TypeOf(v).Elem())
	var unknown []domain.FieldError
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !known[k] {
			p := values.UnknownField(k)
			unknown = append(unknown, domain.FieldError{Field: p.Field, Reason: p.Reason})
		}
	}
	if len(unknown) > 0 {
		return &domain.Error{Code: domain.Invalid, Message: "the request body has fields this route does not take", Details: unknown}
	}
	return nil
}

// jsonKeys are the keys encoding/json reads into a struct type t: the
// names of its exported fields' json tags (or the fields' names).
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case name != "":
			keys[name] = true
		default:
			keys[f.Name] = true
		}
	}
	return keys
}
