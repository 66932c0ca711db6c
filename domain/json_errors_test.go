package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain"
)

// TestJSONDecodeErrorSpeaksJSON: what encoding/json refuses is said with
// JSON's types and the client's field names, never Go's.
func TestJSONDecodeErrorSpeaksJSON(t *testing.T) {
	type scope struct {
		Method string `json:"method"`
	}
	type body struct {
		Name   string            `json:"name"`
		Scopes []scope           `json:"scopes"`
		Keep   bool              `json:"keep"`
		Count  uint              `json:"count"`
		Labels map[string]string `json:"labels"`
	}
	for in, want := range map[string]string{
		`[1,2]`:                          "the request body must be an object, not an array",
		`"x"`:                            "the request body must be an object, not a string",
		`{"name": 3}`:                    `field "name" must be a string, not a number`,
		`{"scopes": {}}`:                 `field "scopes" must be an array, not an object`,
		`{"scopes": [{"method": true}]}`: `field "scopes.method" must be a string, not a boolean`,
		`{"keep": "yes"}`:                `field "keep" must be true or false, not a string`,
		`{"count": -1}`:                  `field "count" must be a non-negative integer, not the number -1`,
		`{"labels": [1]}`:                `field "labels" must be an object, not an array`,
		`{"nme": 1}`:                     `unknown field "nme"`,
		`{"name": }`:                     "the request body is not valid JSON: invalid character '}' looking for beginning of value (at byte 10)",
		`{"name": "x"`:                   "the request body ends before its JSON value does",
	} {
		d := json.NewDecoder(strings.NewReader(in))
		d.DisallowUnknownFields()
		var v body
		err := domain.JSONDecodeError(d.Decode(&v))
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.Invalid {
			t.Errorf("%s: %v, want an invalid_request error", in, err)
			continue
		}
		if de.Message != want {
			t.Errorf("%s: %q, want %q", in, de.Message, want)
		}
	}
	// Errors of the body, not of its JSON, pass as they are.
	other := errors.New("connection reset")
	if err := domain.JSONDecodeError(other); err != other {
		t.Errorf("a read error became %v", err)
	}
	if err := domain.JSONDecodeError(nil); err != nil {
		t.Errorf("nil became %v", err)
	}
}
