package datatarget_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// FuzzOutlet checks the request settings of a new outlet: a refusal is a
// 422 naming the fields; an accepted outlet is one net/http can send (its
// URL, method and headers make a request that writes without error, and
// no two headers are one header in another case, and its request line,
// masked, is whole and shows no query value), its content renders
// valid JSON, and it is stored as accepted: it survives its
// OutletCreated event's JSON unchanged.
func FuzzOutlet(f *testing.F) {
	type seed struct{ url, method, name1, value1, name2, value2, content, secret string }
	for _, s := range []seed{
		{"https://example.com/hook?x=1", "post", "Authorization", "Bearer x", "X-Tab", "a\tb", `{"items": "{(data)}"}`, ""},
		{"http://[::1]:8080/", "PUT", "x-a", "1", "X-A", "2", "", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		{"http://a<b/", "PATCH", "X-Ctl", "a\x01b", "Bad Name", "x", `{`, "whsec_c2hvcnQ="},
		{"https://bücher.example/", "GET", "Content-Length", "1", "X-Ok", "a\nb", `"{(data)}"`, "nope"},
		{"http://user:pass@example.com:99999/", "POST", "X-Del", "a\x7fb", "", "", `"\ud800"`, ""},
		{"http://example.com/hook?api_key=a b", "POST", "X-Api-Key", "k", "", "", "", ""},
	} {
		f.Add(s.url, s.method, s.name1, s.value1, s.name2, s.value2, []byte(s.content), s.secret, true)
	}
	d, err := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, url, method, name1, value1, name2, value2 string, content []byte, secret string, batched bool) {
		// The strings come from a JSON request body: valid UTF-8.
		for _, s := range []string{url, method, name1, value1, name2, value2, secret} {
			if !utf8.ValidString(s) {
				return
			}
		}
		headers := map[string]string{name1: value1}
		if name2 != "" {
			headers[name2] = value2
		}
		spec := datatarget.OutletSpec{Type: datatarget.OutletWebhook, IsBatched: batched, Secret: secret,
			Request: datatarget.Request{URL: url, Method: method, Headers: headers, Content: content}}
		o, err := datatarget.NewOutlet(staff, d, "o1", spec, now)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.Validation || len(de.Details) == 0 {
				t.Fatalf("refused with %v, want a validation_error naming fields", err)
			}
			return
		}
		req, err := http.NewRequest(o.Request.Method, o.Request.URL, strings.NewReader("{}"))
		if err != nil {
			t.Fatalf("the accepted URL %q makes no request: %v", o.Request.URL, err)
		}
		seen := map[string]string{}
		for k, v := range o.Request.Headers {
			canonical := textproto.CanonicalMIMEHeaderKey(k)
			if other, ok := seen[canonical]; ok {
				t.Fatalf("headers %q and %q are one header: which value is sent depends on map order", other, k)
			}
			seen[canonical] = k
			if !validFieldValue(v) {
				t.Fatalf("header %q: the accepted value %q is one net/http refuses to send", k, v)
			}
			req.Header.Set(k, v)
		}
		var written bytes.Buffer
		if err := req.Write(&written); err != nil {
			t.Fatalf("the accepted request (%q %q) cannot be written: %v", o.Request.Method, o.Request.URL, err)
		}
		// Its request line is whole (method, target, version) and masked
		// shows no query value.
		line, _, _ := strings.Cut(datatarget.MaskRawHTTP(written.String()), "\r\n")
		parts := strings.Split(line, " ")
		if len(parts) != 3 || parts[2] != "HTTP/1.1" {
			t.Fatalf("the accepted URL %q makes the request line %q", o.Request.URL, line)
		}
		if _, query, ok := strings.Cut(parts[1], "?"); ok {
			for _, v := range strings.Split(query, "&") {
				if _, value, _ := strings.Cut(v, "="); v != "" && v != datatarget.Masked && value != datatarget.Masked {
					t.Fatalf("the accepted URL %q shows %q masked", o.Request.URL, line)
				}
			}
		}
		tmpl, err := datatarget.CompileTemplate(o.Request.Content)
		if err != nil {
			t.Fatalf("the accepted content %q does not compile: %v", o.Request.Content, err)
		}
		var body bytes.Buffer
		tmpl.Render(&body, []byte(`[{"n":1}]`))
		if !json.Valid(body.Bytes()) || !utf8.Valid(body.Bytes()) {
			t.Fatalf("the accepted content %q renders %q", o.Request.Content, body.Bytes())
		}
		if secret != "" {
			if key, err := datatarget.SecretKey(o.Secret); err != nil || len(key) < 24 {
				t.Fatalf("the accepted secret gives the key %q %v", key, err)
			}
		}
		created, err := datatarget.NewOutletCreated(o, testKeyring)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := json.Marshal(created)
		if err != nil {
			t.Fatal(err)
		}
		var ev datatarget.OutletCreated
		if err := json.Unmarshal(stored, &ev); err != nil {
			t.Fatal(err)
		}
		opened, err := ev.Outlet(o.CompanyID, testKeyring)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(o, opened, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the outlet as stored differs from the outlet accepted (-accepted +stored):\n%s", diff)
		}
	})
}

// validFieldValue reports whether net/http sends v as a header value
// (RFC 9110 field-value: no control character but tab).
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
