package systemtest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/delivery"
)

// importRun uploads body with token, waits for the run and returns its
// rejections (index, field and reason).
func (e *env) importRun(token, path, body string, opts ...option) [][3]any {
	e.t.Helper()
	run := e.mustUpload(token, path, append([]option{rawBody(body)}, opts...)...)
	a, res := e.waitRun(token, run)
	if a.Import.State != "completed" {
		e.t.Fatalf("run: %s", res.body)
	}
	e.waitProjections()
	out := [][3]any{}
	for _, r := range a.Import.Rejections {
		f := ""
		if r.Field != nil {
			f = *r.Field
		}
		out = append(out, [3]any{r.Index, f, r.Reason})
	}
	return out
}

// TestDestructionNeedsAdmin: deleting and forgetting customers and
// deleting events by upload need the admin role. A staff user's token and
// a token without roles have those records rejected, each with the
// reason, and the rest of their upload imported; an admin's are applied.
func TestDestructionNeedsAdmin(t *testing.T) {
	e, admin := eventsEnv(t)
	staff := e.userToken(e.staff, acmeHost)
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + e.createIntegration(admin, "shop")}).AccessToken.Token

	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c1", "email": "c1@x.test"}, {"external_id": "c2"}, {"external_id": "c3"}]`)
	e.importAll(admin, "/api/events/upload/", `[{"type": "BROWSE", "date": "2025-01-02", "email": "c1@x.test", "label": "home"}]`)

	const reason = "deleting and forgetting need the admin role: send this record with an admin's token"
	got := e.importRun(staff, "/api/customers/upload/", `[
		{"external_id": "c1", "is_deleted": true},
		{"external_id": "c2", "is_forgotten": "true"},
		{"external_id": "c3", "first_name": "Ann", "is_deleted": false}]`)
	if diff := cmp.Diff([][3]any{{0, "is_deleted", reason}, {1, "is_forgotten", reason}}, got); diff != "" {
		t.Errorf("staff's customers: rejections (-want +got):\n%s", diff)
	}
	got = e.importRun(bare, "/api/customers/upload/", "external_id,is_forgotten,is_deleted,last_name\nc2,true,,\nc1,,1,\nc3,,,Bo\n",
		withHeader("Content-Type", "text/csv"))
	if diff := cmp.Diff([][3]any{{0, "is_forgotten", reason}, {1, "is_deleted", reason}}, got); diff != "" {
		t.Errorf("token without roles, CSV: rejections (-want +got):\n%s", diff)
	}
	got = e.importRun(staff, "/api/events/upload/", `[{"id": 1, "is_deleted": true}, {"type": "BROWSE", "date": "2025-01-03", "email": "c1@x.test", "label": "home"}]`)
	if diff := cmp.Diff([][3]any{{0, "is_deleted", reason}}, got); diff != "" {
		t.Errorf("staff's events: rejections (-want +got):\n%s", diff)
	}
	customers := byExternalID(e.retrieveAll(admin, "customers").Items)
	if len(customers) != 3 || customers["c3"]["first_name"] != "Ann" || customers["c3"]["last_name"] != "Bo" {
		t.Errorf("customers after the refused deletions: %v", customers)
	}
	if n := len(e.retrieveAll(admin, "events").Items); n != 2 {
		t.Errorf("%d events, want 2 (none deleted)", n)
	}

	if got := e.importRun(admin, "/api/customers/upload/", `[{"external_id": "c1", "is_deleted": true}, {"external_id": "c2", "is_forgotten": true}]`); len(got) != 0 {
		t.Errorf("admin's customers: rejections %v", got)
	}
	if got := e.importRun(admin, "/api/events/upload/", `[{"id": 1, "is_deleted": true}]`); len(got) != 0 {
		t.Errorf("admin's events: rejections %v", got)
	}
	if customers := byKey(e.retrieveAll(admin, "customers").Items, "external_id"); len(customers) != 1 || customers["c3"] == nil {
		t.Errorf("customers after the admin's deletions: %v", customers)
	}
	if n := len(e.retrieveAll(admin, "events").Items); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

// TestDataQueryDestructionNeedsAdmin: a data query whose update deletes
// or forgets, of any datatype, is 403 without the admin role; other
// updates are not.
func TestDataQueryDestructionNeedsAdmin(t *testing.T) {
	e, admin := eventsEnv(t)
	staff := e.userToken(e.staff, acmeHost)
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + e.createIntegration(admin, "shop")}).AccessToken.Token
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c1", "email": "c1@x.test"}]`)

	query := func(token string, q string) response {
		return e.do(http.MethodPost, "/api/data/query/", bearer(token), rawBody(q))
	}
	for _, token := range []string{staff, bare} {
		for _, q := range []string{
			`{"datatype": "customers", "match": {"external_id": "c1"}, "update": {"is_deleted": true}}`,
			`{"datatype": "customers", "match": {"external_id": "c1"}, "update": {"is_forgotten": "true"}}`,
			`{"datatype": "customers", "match": {"external_id": "c1"}, "update": {"first_name": "A", "is_deleted": 1}}`,
			`{"datatype": "events", "match": {"type": "BROWSE"}, "update": {"is_deleted": true}}`,
			`{"datatype": "products", "match": {"external_id": "p1"}, "update": {"is_deleted": "TRUE"}}`,
			`{"datatype": "sales", "match": {"sale_external_id": "s1"}, "update": {"sale_is_deleted": true}}`,
		} {
			b := query(token, q).wantError(t, http.StatusForbidden, "forbidden")
			if !strings.Contains(b.Error.Message, "admin role") {
				t.Errorf("%s: message %q", q, b.Error.Message)
			}
		}
		query(token, `{"datatype": "customers", "match": {"external_id": "c1"}, "update": {"first_name": "Bea", "is_deleted": false}}`).
			wantStatus(t, http.StatusOK)
	}
	res := query(admin, `{"datatype": "customers", "match": {"external_id": "c1"}, "update": {"is_deleted": true}}`)
	res.wantStatus(t, http.StatusOK)
	var a struct {
		Updated int    `json:"updated"`
		RunID   string `json:"run_id"`
	}
	res.decode(t, &a)
	if run, _ := e.waitRun(admin, a.RunID); a.Updated != 1 || run.Import.Accepted != 1 {
		t.Errorf("admin's deletion: %+v, run %+v", a, run.Import)
	}
}

// TestOutletCredentialsMasked: the values of an outlet's headers are
// shown in hint form to everyone, admins included (they are sealed at
// rest: datatarget.Credentials), and so is its secret; the values of its
// URL's query and the password of its URL are shown to admins only. This
// holds in every answer that shows the outlet; in the raw request of its
// attempt log the header values are masked for everyone, the request
// line and the reply's headers for all but admins. What is sent is
// unchanged.
func TestOutletCredentialsMasked(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	path := "/api/datatargets/" + id + "/outlets/"

	type receipt struct {
		header http.Header
		query  string
	}
	received := make(chan receipt, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case received <- receipt{r.Header.Clone(), r.URL.RawQuery}:
		default:
		}
		w.Header().Set("Set-Cookie", "session=from-the-receiver")
	}))
	t.Cleanup(rcv.Close)
	headers := map[string]string{
		"Authorization": "Bearer s3cr3t", "X-Api-Key": "k3y", "x-custom-TOKEN": "t0k", "Cookie": "session=c00kie",
		"Client-Secret": "sh", "X-Password": "pw", "X-Authenticated-As": "me", "X-Source": "clientele",
		// No word of a credential in their names, credentials all the same.
		"X-Credential": "cr3d", "X-Api-Pass": "p4ssw", "X-Signature": "s1gn4", "X-Session-Id": "s3ss", "X-JWT": "jwt0",
		// Harmless, shown to everyone.
		"Content-Type": "application/json", "accept": "application/json",
	}
	query := "api_key=q1k3y&region=eu-w3st&flag"
	hookURL := strings.Replace(rcv.URL, "http://", "http://hook:p4ss@", 1) + "/hook?" + query
	res := e.do(http.MethodPost, path, bearer(staff), jsonBody(map[string]any{
		"outlet_type": "webhook", "min_request_interval": 0, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"request": map[string]any{"url": hookURL, "method": "POST", "headers": headers, "format": "json"},
	}))
	res.wantStatus(t, http.StatusOK)
	var o outletAnswer
	res.decode(t, &o)
	oid := o.Outlet.ID

	// Hints: a value of 8 characters or fewer masked whole, a longer one
	// showing 4 characters at each end (access.TokenHint).
	hints := map[string]string{
		"Authorization": "Bear*****cr3t", "X-Api-Key": "***", "x-custom-TOKEN": "***", "Cookie": "sess******0kie",
		"Client-Secret": "**", "X-Password": "**", "X-Authenticated-As": "**", "X-Source": "clie*tele",
		"X-Credential": "****", "X-Api-Pass": "*****", "X-Signature": "*****", "X-Session-Id": "****", "X-JWT": "****",
		"Content-Type": "appl********json", "accept": "appl********json",
	}
	maskedURL := strings.Replace(rcv.URL, "http://", "http://hook:xxxxx@", 1) + "/hook?api_key=****&region=****&****"
	type request struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	check := func(what string, got request, admin bool) {
		t.Helper()
		want := request{maskedURL, hints}
		if admin {
			want = request{hookURL, hints}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	var created struct {
		Outlet struct{ Request request } `json:"outlet"`
	}
	res.decode(t, &created)
	check("staff's create answer", created.Outlet.Request, false)
	for _, who := range []struct {
		token string
		admin bool
	}{{staff, false}, {admin, true}} {
		var one struct {
			Outlet struct{ Request request } `json:"outlet"`
		}
		e.do(http.MethodGet, path+oid+"/", bearer(who.token)).decode(t, &one)
		check("GET outlet", one.Outlet.Request, who.admin)
		var dt struct {
			Datatarget struct {
				Outlets []struct{ Request request } `json:"outlets"`
			} `json:"datatarget"`
		}
		e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(who.token)).decode(t, &dt)
		if len(dt.Datatarget.Outlets) != 1 {
			t.Fatalf("datatarget outlets %+v", dt)
		}
		check("GET datatarget", dt.Datatarget.Outlets[0].Request, who.admin)
		var list struct {
			Datatargets []struct {
				Outlets []struct{ Request request } `json:"outlets"`
			} `json:"datatargets"`
		}
		e.do(http.MethodGet, "/api/datatargets/", bearer(who.token)).decode(t, &list)
		if len(list.Datatargets) != 1 || len(list.Datatargets[0].Outlets) != 1 {
			t.Fatalf("datatargets %+v", list)
		}
		check("datatarget list", list.Datatargets[0].Outlets[0].Request, who.admin)
	}

	// Deliver one message; the receiver gets the credentials as configured.
	dl, err := delivery.New(delivery.Config{
		Pool: e.pool, Keys: e.keys, Disable: e.cmds.DisableOutlet.BySystem, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		PollInterval: 10 * time.Millisecond, LeaseTTL: time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = dl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": []any{map[string]int{"n": 1}}})).
		wantStatus(t, http.StatusOK)
	select {
	case got := <-received:
		h := got.header
		if h.Get("Authorization") != "Bearer s3cr3t" || h.Get("X-Api-Key") != "k3y" || h.Get("Cookie") != "session=c00kie" ||
			h.Get("X-Jwt") != "jwt0" || got.query != query {
			t.Errorf("the receiver got %v, query %q", h, got.query)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered in 10 s")
	}

	entry := func(token string) (req, reply string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			res := e.do(http.MethodGet, path+oid+"/log/1/", bearer(token))
			if res.status == http.StatusOK {
				var a struct {
					Entry struct {
						HTTPRequest string `json:"http_request"`
						HTTPReply   string `json:"http_reply"`
					} `json:"entry"`
				}
				res.decode(t, &a)
				return a.Entry.HTTPRequest, a.Entry.HTTPReply
			}
			if time.Now().After(deadline) {
				t.Fatalf("no log entry: %s", res.body)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	maskedHeaders := []string{"Authorization: ****\r\n", "X-Api-Key: ****\r\n", "X-Custom-Token: ****\r\n", "Cookie: ****\r\n",
		"X-Source: ****\r\n", "X-Credential: ****\r\n", "X-Api-Pass: ****\r\n", "X-Signature: ****\r\n",
		"X-Session-Id: ****\r\n", "X-Jwt: ****\r\n", "webhook-signature: ****\r\n",
		// Set by the outlet: its values are masked, harmless as their names are.
		"Content-Type: ****\r\n", "Accept: ****\r\n",
		"User-Agent: Clientele-Webhooks/", "Host: 127.0.0.1:", "Content-Length: ", "webhook-id: msg_", "webhook-timestamp: 1", `{"n":1}`}
	headerValues := []string{"s3cr3t", "k3y", "t0k", "c00kie", "cr3d", "s1gn4", "s3ss", "jwt0", "clientele", "v1,"}
	req, reply := entry(admin)
	for _, s := range append([]string{"POST /hook?" + query + " HTTP/1.1\r\n"}, maskedHeaders...) {
		if !strings.Contains(req, s) {
			t.Errorf("the admin's raw request lacks %q:\n%s", s, req)
		}
	}
	for _, secret := range headerValues {
		if _, headers, _ := strings.Cut(req, "\r\n"); strings.Contains(headers, secret) { // the query is the admin's to read
			t.Errorf("the admin's raw request shows %q:\n%s", secret, req)
		}
	}
	if !strings.Contains(reply, "Set-Cookie: session=from-the-receiver\r\n") {
		t.Errorf("the admin's raw reply:\n%s", reply)
	}
	req, reply = entry(staff)
	for _, secret := range append(headerValues, "p4ss", "from-the-receiver", "q1k3y", "eu-w3st", "flag") {
		if strings.Contains(req, secret) || strings.Contains(reply, secret) {
			t.Errorf("staff's raw texts show %q:\n%s\n%s", secret, req, reply)
		}
	}
	for _, s := range append([]string{"POST /hook?api_key=****&region=****&**** HTTP/1.1\r\n"}, maskedHeaders...) {
		if !strings.Contains(req, s) {
			t.Errorf("staff's raw request lacks %q:\n%s", s, req)
		}
	}
	if !strings.Contains(reply, "Set-Cookie: ****\r\n") || !strings.Contains(reply, "Content-Length: 0\r\n") {
		t.Errorf("staff's raw reply:\n%s", reply)
	}
}
