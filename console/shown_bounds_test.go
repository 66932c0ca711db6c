package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// pageBound is the most a console page may weigh, whatever was stored.
const pageBound = 256 << 10

// TestStoredValuesShowBounded: messages the API accepts, one nested 9,990
// levels deep, one 200,000 values wide and one a 1 MB string, are shown
// on the datatarget's page within 256 KB (the deep one was 200 MB), each
// cut short with a link that downloads it whole, byte for byte as the
// API stored it; the API's own retrieval answers them within a few bytes
// of what was posted. A small message is shown whole, without the link.
// An outlet's content template 5,000 levels deep is bounded the same way
// on the outlet's page, which links it whole.
func TestStoredValuesShowBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	d, err := e.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: e.adminPrincipal(), Type: datatarget.Messages, Name: "Deep"})
	if err != nil {
		t.Fatal(err)
	}
	deep := `{"deep": ` + strings.Repeat("[", 9988) + strings.Repeat("]", 9988) + `}`
	wide := `{"wide": [` + strings.Repeat(`1,`, 200_000) + `1]}`
	long := `{"long": "` + strings.Repeat("x", 1<<20) + `"}`
	small := `{"small": 1}`
	token := e.apiToken()
	for _, m := range []string{deep, wide, long, small} {
		if status, body := e.apiCall(token, http.MethodPost, "/api/datatargets/"+d.ID+"/post/", `{"messages": [`+m+`]}`); status != http.StatusOK {
			t.Fatalf("post: %d %.300s", status, body)
		}
	}
	status, body := e.apiCall(token, http.MethodGet, "/api/datatargets/"+d.ID+"/retrieve/", "")
	if want := len(deep) + len(wide) + len(long) + 1000; status != http.StatusOK || len(body) > want {
		t.Errorf("retrieve: %d, %d bytes (the messages are %d)", status, len(body), want-1000)
	}

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	res, page := c.do(http.MethodGet, "/console/datatargets/"+d.ID, nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("page: %d %.500s", res.StatusCode, page)
	}
	if len(page) > pageBound {
		t.Errorf("the page is %d bytes, over %d", len(page), pageBound)
	}
	links := regexp.MustCompile(`<a class="download" href="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(links) != 3 {
		t.Fatalf("%d download links, want one for each of the 3 messages too large to show:\n%.3000s", len(links), page)
	}
	// Newest first: message 3 (long), 2 (wide), 1 (deep).
	for i, want := range []string{long, wide, deep} {
		path := links[i][1]
		if wantPath := "/console/datatargets/" + d.ID + "/messages/" + itoa(3-i); path != wantPath {
			t.Errorf("link %d is %s, want %s", i+1, path, wantPath)
		}
		res, got := c.do(http.MethodGet, path, nil, nil)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("download %s: %d %v", path, res.StatusCode, res.Header)
		}
		if !jsonEqual(t, got, want) {
			t.Errorf("download %s: %.200s..., want the message posted", path, got)
		}
	}
	if !strings.Contains(page, "{\n  &#34;small&#34;: 1\n}") {
		t.Errorf("the small message is not shown whole:\n%.3000s", page)
	}
	if res, _ := c.do(http.MethodGet, "/console/datatargets/"+d.ID+"/messages/5", nil, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("download of a message that is not: %d", res.StatusCode)
	}

	// An outlet whose content template is 5,000 levels deep: its page
	// is bounded too, and links the whole template.
	content := strings.Repeat("[", 5000) + `"{{message}}"` + strings.Repeat("]", 5000)
	status, body = e.apiCall(token, http.MethodPost, "/api/datatargets/"+d.ID+"/outlets/",
		`{"outlet_type": "webhook", "request": {"url": "https://example.com/", "method": "POST", "format": "json", "content": `+content+`}}`)
	if status != http.StatusOK {
		t.Fatalf("outlet: %d %.300s", status, body)
	}
	var o struct {
		Outlet struct {
			ID string `json:"id"`
		} `json:"outlet"`
	}
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	outletPath := "/console/datatargets/" + d.ID + "/outlets/" + o.Outlet.ID
	res, page = c.do(http.MethodGet, outletPath, nil, nil)
	if res.StatusCode != http.StatusOK || len(page) > pageBound || !strings.Contains(page, `href="`+outletPath+`/content"`) {
		t.Errorf("outlet page: %d, %d bytes, linking its content: %v", res.StatusCode, len(page), strings.Contains(page, outletPath+"/content"))
	}
	if res, got := c.do(http.MethodGet, outletPath+"/content", nil, nil); res.StatusCode != http.StatusOK || !jsonEqual(t, got, content) {
		t.Errorf("content download: %d, %.100s", res.StatusCode, got)
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestCustomerValuesShowBounded: a customer imported with a 600 KB name
// and 20,000 tags (a record is at most 1 MiB) is shown on its page and
// in the list within 256 KB, each value cut short; the page links the
// customer's whole document, which holds them whole.
func TestCustomerValuesShowBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := strings.Repeat("n", 600_000)
	tags := make([]string, 20_000)
	for i := range tags {
		tags[i] = "tag" + itoa(i)
	}
	record, _ := json.Marshal([]map[string]any{{"external_id": "long", "first_name": name, "tags": tags}})
	admin := e.adminPrincipal()
	up, err := e.uploads.Handle(context.Background(), imports.StageUpload{Principal: admin, Entity: importing.Customers, Format: ingest.JSON, Body: bytes.NewReader(record)})
	if err != nil {
		t.Fatal(err)
	}
	if state := e.waitRun(up.RunID); state != "completed" {
		t.Fatalf("run: %s", state)
	}
	id := e.waitCustomer(e.acme, "external_id", "long")

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	for _, path := range []string{"/console/customers/" + id, "/console/customers"} {
		res, page := c.do(http.MethodGet, path, nil, nil)
		if res.StatusCode != http.StatusOK || len(page) > pageBound {
			t.Errorf("%s: %d, %d bytes (at most %d)", path, res.StatusCode, len(page), pageBound)
		}
		if !strings.Contains(page, "nnnn…") || !strings.Contains(page, "tag0, tag1") {
			t.Errorf("%s does not show the values' beginnings", path)
		}
	}
	_, page := c.do(http.MethodGet, "/console/customers/"+id, nil, nil)
	download := `<a class="download" href="/console/customers/` + id + `/document"`
	if !strings.Contains(page, download) {
		t.Fatalf("the customer's page does not link its document:\n%.2000s", page)
	}
	res, doc := c.do(http.MethodGet, "/console/customers/"+id+"/document", nil, nil)
	var got struct {
		FirstName string   `json:"first_name"`
		Tags      []string `json:"tags"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(doc), &got) != nil || got.FirstName != name || len(got.Tags) != len(tags) {
		t.Errorf("document: %d, %d bytes", res.StatusCode, len(doc))
	}
}
