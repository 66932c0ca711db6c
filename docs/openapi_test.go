package docs_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/goccy/go-yaml"

	"github.com/clientele/clientele/docs"
)

// TestOpenAPIValid lints docs/openapi.yaml as an OpenAPI 3.0 document:
// kin-openapi loads it, resolves every $ref and validates it (schemas,
// parameters, examples against their schemas).
func TestOpenAPIValid(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml is not a valid OpenAPI document: %v", err)
	}
}

// TestOpenAPIYAMLStrict refuses what YAML accepts but the author did not
// mean: in flow style an unquoted comma ends a value, so
// `{type: integer, description: 100 when batched, 1 otherwise.}` is a
// description cut short and a key "1 otherwise." with the value null; and
// `nullable` means nothing without a `type` (OpenAPI 3.0.3).
func TestOpenAPIYAMLStrict(t *testing.T) {
	var root any
	if err := yaml.Unmarshal(docs.OpenAPI, &root); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	problems := yamlProblems(root)
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestOpenAPIYAMLStrictRefusesFlowStyleCommas(t *testing.T) {
	var root any
	src := `
components:
  schemas:
    Outlet:
      type: object
      properties:
        max_batch_size: {type: integer, description: 100 for a batched outlet, 1 otherwise.}
        hint: {type: string, description: Last four characters,hex}
        folder:
          nullable: true
          allOf: [{$ref: "#/components/schemas/Folder"}]
      example: {rate: null}
`
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	got := yamlProblems(root)
	want := []string{
		`components.schemas.Outlet.properties.folder: nullable without type`,
		`components.schemas.Outlet.properties.hint: key "hex" has no value (an unquoted comma in flow style?)`,
		`components.schemas.Outlet.properties.max_batch_size: key "1 otherwise." looks like prose (an unquoted comma or colon in flow style?)`,
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// yamlProblems walks a parsed document. Under example, examples, default
// and enum a null is a value the author meant; anywhere else a key with
// the value null, or a key with a space in it, is prose that a comma or
// colon cut off a flow-style value.
func yamlProblems(root any) []string {
	var problems []string
	var walk func(path string, v any, literal bool)
	walk = func(path string, v any, literal bool) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["nullable"]; ok {
				if _, typed := x["type"]; !typed && !literal {
					problems = append(problems, path+": nullable without type")
				}
			}
			for k, c := range x {
				p := strings.TrimPrefix(path+"."+k, ".")
				if !literal && !strings.HasPrefix(k, "/") && strings.ContainsAny(k, " \t") {
					problems = append(problems, fmt.Sprintf("%s: key %q looks like prose (an unquoted comma or colon in flow style?)", path, k))
				} else if c == nil && !literal {
					problems = append(problems, fmt.Sprintf("%s: key %q has no value (an unquoted comma in flow style?)", path, k))
				}
				walk(p, c, literal || k == "example" || k == "examples" || k == "default" || k == "enum")
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), c, literal)
			}
		}
	}
	walk("", root, false)
	return problems
}
