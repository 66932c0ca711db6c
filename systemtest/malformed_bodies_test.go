package systemtest_test

import (
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/docs"
)

// goSyntax is what an answer never says: the words and types of Go and
// of its libraries, which a client neither sent nor can act on.
var goSyntax = regexp.MustCompile(`Go value|Go struct|struct \{|interface \{\}|map\[|\[\][a-z*]|\*[a-z]+\.[A-Z]|\bjson: |\bssh: |strconv\.|reflect\.|runtime\.|\bgzip: |\bx509: |\basn1: |%!|goroutine`)

// malformedTopLevel are bodies that are not the JSON object any route takes.
var malformedTopLevel = []string{
	`[1,2]`, `"text"`, `42`, `true`, `null`, `{`, `{"a":1}{`, `{"a":1} 2`, `{"a":}`, `{"a" 1}`,
	`{}`, `{"unknown_field": 1}`, `{"nme": 3}`, "\xff\xfe", `{"a":"\ud800"}`,
}

// wrongValues are JSON values of every type, each wrong for most fields.
var wrongValues = []string{`[1]`, `["a"]`, `{"x":1}`, `"s"`, `1.5`, `-1`, `true`, `1e400`, `null`, `[[]]`, `{"x":{"y":[1]}}`}

// TestMalformedBodiesAnswerInClientTerms sends a battery of malformed
// bodies to every POST, PATCH and PUT route: wrong JSON at the top
// level, unknown fields, and every documented field of the request (and
// of its objects, one level down) with a value of each JSON type. No
// answer may speak Go (goSyntax), and every answer is as
// docs/openapi.yaml documents it (e.do checks).
func TestMalformedBodiesAnswerInClientTerms(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	admin := e.userToken(e.admin, acmeHost)
	datatarget := e.createDatatarget(admin, "orders")
	campaign := e.createCampaign(admin, map[string]any{"campaign_key": "spring", "kind": "email", "name": "Spring"}).CampaignKey
	outlet := e.createOutlet(admin, datatarget, "http://127.0.0.1:9/hook", false)
	ids := map[string]string{"id": datatarget, "key": campaign, "outlet_id": outlet, "parked_id": "1"}

	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var routes []string
	for _, r := range e.api.Routes() {
		if r.Method != http.MethodPost && r.Method != http.MethodPatch && r.Method != http.MethodPut {
			continue
		}
		p := ginParam.ReplaceAllString(r.Path, "{$1}")
		if !strings.HasPrefix(p, "/api/") || !strings.HasSuffix(p, "/") || seen[r.Method+" "+p] {
			continue
		}
		seen[r.Method+" "+p] = true
		routes = append(routes, r.Method+" "+p)
	}
	sort.Strings(routes)
	if len(routes) < 15 {
		t.Fatalf("only %d POST, PATCH and PUT routes: %v", len(routes), routes)
	}

	statuses := map[int]int{}
	send := func(method, path, body string) {
		t.Helper()
		res := e.do(method, path, bearer(admin), rawBody(body))
		statuses[res.status]++
		if res.status == http.StatusOK || res.status >= 500 {
			if res.status >= 500 {
				t.Errorf("%s %s with %s: %d %s", method, path, body, res.status, res.body)
			}
			return
		}
		if m := goSyntax.Find(res.body); m != nil {
			t.Errorf("%s %s with %s answers in Go's terms (%q): %s", method, path, body, m, res.body)
		}
	}
	for _, route := range routes {
		method, tmpl, _ := strings.Cut(route, " ")
		path := tmpl
		for name, id := range ids {
			path = strings.ReplaceAll(path, "{"+name+"}", id)
		}
		if strings.Contains(path, "{") {
			t.Fatalf("%s: no id to fill in", route)
		}
		for _, body := range malformedTopLevel {
			send(method, path, body)
		}
		for _, field := range requestFields(doc, method, tmpl) {
			for _, v := range wrongValues {
				send(method, path, nested(field, v))
			}
		}
	}
	// Keys that are not keys, in every way the SSH library can refuse.
	for _, key := range []string{"not a key", "ssh-ed25519", "ssh-ed25519 AAAA", "ssh-ed25519 !!!!", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
		`from="10.0.0.1" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl`} {
		b, _ := json.Marshal(map[string]string{"name": "k", "public_key": key})
		send(http.MethodPost, "/api/sftp-keys/", string(b))
	}
	// A misspelt field is named, not only the field it failed to be.
	var b errorBody
	res := e.do(http.MethodPost, "/api/integrations/", bearer(admin), rawBody(`{"nme": 3}`))
	res.wantStatus(t, http.StatusUnprocessableEntity)
	res.decode(t, &b)
	named := false
	for _, d := range b.Error.Details {
		named = named || d.Field == "nme"
	}
	if !named {
		t.Errorf(`{"nme": 3} answered without naming nme: %s`, res.body)
	}
	t.Logf("malformed bodies sent to %d routes, answered by status: %v", len(routes), statuses)
	if statuses[http.StatusBadRequest] < 500 {
		t.Errorf("only %d of the bodies reached the decoding (answered 400): %v", statuses[http.StatusBadRequest], statuses)
	}
}

// requestFields lists the properties of the documented JSON request body
// of the operation, and of its objects one level down ("a.b").
func requestFields(doc *openapi3.T, method, path string) []string {
	item := doc.Paths.Find(path)
	if item == nil {
		return nil
	}
	op := item.GetOperation(method)
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	var fields []string
	var walk func(prefix string, s *openapi3.Schema, depth int)
	walk = func(prefix string, s *openapi3.Schema, depth int) {
		if s == nil || depth > 1 {
			return
		}
		props := map[string]*openapi3.SchemaRef{}
		for name, p := range s.Properties {
			props[name] = p
		}
		for _, sub := range append(append(s.AllOf, s.OneOf...), s.AnyOf...) {
			if sub.Value != nil {
				for name, p := range sub.Value.Properties {
					props[name] = p
				}
			}
		}
		if s.Items != nil && s.Items.Value != nil && depth == 0 {
			walk(prefix, s.Items.Value, depth+1)
		}
		for name, p := range props {
			fields = append(fields, prefix+name)
			if p.Value != nil {
				walk(prefix+name+".", p.Value, depth+1)
				if p.Value.Items != nil && p.Value.Items.Value != nil {
					walk(prefix+name+".0.", p.Value.Items.Value, depth+1)
				}
			}
		}
	}
	walk("", mt.Schema.Value, 0)
	sort.Strings(fields)
	return fields
}

// nested is the body that sets the field path ("a.b", "a.0.b") to the raw
// JSON value v.
func nested(field, v string) string {
	parts := strings.Split(field, ".")
	out := v
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == "0" {
			out = "[" + out + "]"
			continue
		}
		k, _ := json.Marshal(parts[i])
		out = "{" + string(k) + ":" + out + "}"
	}
	return out
}
