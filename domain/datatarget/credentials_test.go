package datatarget_test

import (
	"strings"
	"testing"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

var admin = access.Principal{CompanyID: "c1", UserID: "u2", Roles: []access.Role{access.RoleAdmin}}

// TestMaskText: every http or https URL of a text is masked (query values
// and password), however it is quoted or delimited, and the rest of the
// text is kept.
func TestMaskText(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"Go's url.Error", `no reply: Post "http://127.0.0.1:9/hook?api_key=secret&x=1": dial tcp 127.0.0.1:9: connect: connection refused`,
			`no reply: Post "http://127.0.0.1:9/hook?api_key=****&x=****": dial tcp 127.0.0.1:9: connect: connection refused`},
		{"escaped quote in the query", `Post "http://h/?a=\"b&token=secret": EOF`, `Post "http://h/?a=****&token=****": EOF`},
		{"unquoted, then text", `GET https://h/p?k=secret failed; retry`, `GET https://h/p?k=**** failed; retry`},
		{"password", `to http://user:secret@h/`, `to http://user:xxxxx@h/`},
		{"two URLs, upper case scheme", `HTTP://a/?k=secret and https://b/?k=secret2`, `http://a/?k=**** and https://b/?k=****`},
		{"a name without a value", `http://h/?secret`, `http://h/?****`},
		{"no query", `dial http://h/p: refused`, `dial http://h/p: refused`},
		{"no URL", `the receiver answered 500 Internal Server Error`, `the receiver answered 500 Internal Server Error`},
		{"at the end", `see http://h/?k=secret`, `see http://h/?k=****`},
	}
	for _, tt := range tests {
		if got := datatarget.MaskText(tt.text); got != tt.want {
			t.Errorf("%s: MaskText(%q)\n = %q\nwant %q", tt.name, tt.text, got, tt.want)
		}
	}
}

// TestLogEntryFor: an attempt's raw request shows its header values
// masked to everyone, admins included (an entry stored before the worker
// masked them); its request line and failure reason are shown as stored
// to admins and masked to everyone else: a staff user and a role-less
// integration token.
func TestLogEntryFor(t *testing.T) {
	e := datatarget.LogEntry{
		Status:      datatarget.StatusFail,
		FailReason:  `no reply: Post "http://127.0.0.1:9/hook?api_key=secret": dial tcp 127.0.0.1:9: connect: connection refused`,
		HTTPRequest: "POST /hook?api_key=secret HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-Api-Key: secret\r\n\r\n{}",
	}
	want := e
	want.HTTPRequest = "POST /hook?api_key=secret HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-Api-Key: ****\r\n\r\n{}"
	if got := e.For(admin); got != want {
		t.Errorf("the admin's entry %+v", got)
	}
	for name, p := range map[string]access.Principal{"staff": staff, "integration": bare} {
		got := e.For(p)
		for what, text := range map[string]string{"fail_reason": got.FailReason, "http_request": got.HTTPRequest} {
			if strings.Contains(text, "secret") {
				t.Errorf("%s reads %s %q", name, what, text)
			}
		}
		if !strings.Contains(got.FailReason, "api_key=****") || !strings.Contains(got.FailReason, "connection refused") {
			t.Errorf("%s reads fail_reason %q", name, got.FailReason)
		}
	}
}

// TestOutletURLValidity: a URL holding a character no URL may hold as it
// is (a space, a quote, a control or non-ASCII character, a % that starts
// no escape) is refused, naming request.url; the same URL encoded is
// accepted.
func TestOutletURLValidity(t *testing.T) {
	d, _ := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	for _, u := range []string{"http://h/?api_key=a b", "http://h/?k=a\"b", "http://h/a\tb", "http://h/?k=%zz", "http://h/?k=%",
		"https://bücher.example/", "http://h/<x>", "http://h/?k=a|b", "http://h/\\x"} {
		_, err := datatarget.NewOutlet(staff, d, "o", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: u}}, now)
		if got := fields(err); code(err) != domain.Validation || len(got) != 1 || got[0] != "request.url" {
			t.Errorf("%q: %v, fields %v", u, err, got)
		}
	}
	for _, u := range []string{"http://h/?api_key=a%20b", "https://xn--bcher-kva.example/", "http://u:p@h:8080/a/b;c?k=v&l=%2F#f",
		"http://[::1]:80/", "http://h/~a_b-c.d?x=(1)*!$'+,"} {
		if _, err := datatarget.NewOutlet(staff, d, "o", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: u}}, now); err != nil {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// TestMaskRawHTTPRequestLine: the query of a raw request line is masked
// to its version, a space in it included (a URL stored before spaces
// were refused was sent with them), and so is a line cut short.
func TestMaskRawHTTPRequestLine(t *testing.T) {
	tests := map[string]string{
		"POST /hook?api_key=a b&c=d HTTP/1.1\r\nHost: h\r\n\r\n{}": "POST /hook?api_key=****&c=**** HTTP/1.1\r\nHost: h\r\n\r\n{}",
		"POST /hook?api_key=secret HTTP/1.1\r\n":                   "POST /hook?api_key=**** HTTP/1.1\r\n",
		"POST /hook?api_key=sec":                                   "POST /hook?api_key=****",
		"POST /hook HTTP/1.1\r\n":                                  "POST /hook HTTP/1.1\r\n",
		"HTTP/1.1 500 Internal Server Error\r\n":                   "HTTP/1.1 500 Internal Server Error\r\n",
	}
	for raw, want := range tests {
		if got := datatarget.MaskRawHTTP(raw); got != want {
			t.Errorf("MaskRawHTTP(%q)\n = %q\nwant %q", raw, got, want)
		}
	}
}
