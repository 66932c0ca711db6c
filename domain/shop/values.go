package shop

import (
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// The reasons below describe the expected form and never quote the value:
// rejections are stored.

func externalID(v any) (string, string) {
	s, ok := values.Scalar(v)
	s = strings.TrimSpace(s)
	if !ok || s == "" || len(s) > 200 {
		return "", "must be a non-empty string of at most 200 characters"
	}
	return s, ""
}

func shopType(v any) (any, string) {
	s, _ := v.(string)
	switch t := strings.ToLower(strings.TrimSpace(s)); t {
	case "online", "offline":
		return t, ""
	}
	return nil, "must be online or offline"
}

func text(v any) (any, string)    { return values.Any(values.Text(v)) }
func email(v any) (any, string)   { return values.Any(values.Email(v)) }
func country(v any) (any, string) { return values.Any(values.Country(v)) }
func boolean(v any) (any, string) { return values.Any(values.Bool(v)) }
