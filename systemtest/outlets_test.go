package systemtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
)

// outletAnswer is an outlet as a client reads it.
type outletAnswer struct {
	Outlet struct {
		ID                         string  `json:"id"`
		Enabled                    bool    `json:"enabled"`
		LastDeliveredMessageNumber int64   `json:"last_delivered_message_number"`
		DeliveredBatchCount        int64   `json:"delivered_batch_count"`
		State                      string  `json:"state"`
		OldestUndeliveredAt        *string `json:"oldest_undelivered_at"`
	} `json:"outlet"`
}

// logAnswer is a page of an outlet's log.
type logAnswer struct {
	Order      string `json:"order"`
	Limit      int    `json:"limit"`
	TotalCount int    `json:"total_count"`
	NextURL    string `json:"next_url"`
	Entries    []struct {
		EntryKey    string `json:"entry_key"`
		EntryNumber int    `json:"entry_number"`
		Status      string `json:"status"`
		HTTPRequest *string
	} `json:"entries"`
}

// TestOutlets creates an outlet, delivers through it with a real
// deliverer and receiver (which fails once), and reads its log.
func TestOutlets(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id := e.createDatatarget(admin, "orders")
	path := "/api/datatargets/" + id + "/outlets/"

	var calls atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 1 {
			http.Error(w, "not now", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(rcv.Close)

	res := e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "is_batched": "yes",
	}))
	res.wantError(t, http.StatusBadRequest, "invalid_request")
	res = e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "request": map[string]any{"url": "ftp://x", "method": "GET", "format": "xml"}, "min_request_interval": "soon",
	}))
	if b := res.wantError(t, http.StatusUnprocessableEntity, "validation_error"); len(b.Error.Details) != 1 {
		t.Errorf("details %+v", b.Error.Details)
	}
	res = e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "request": map[string]any{"url": "ftp://x", "method": "GET", "format": "xml"},
	}))
	if b := res.wantError(t, http.StatusUnprocessableEntity, "validation_error"); len(b.Error.Details) != 3 {
		t.Errorf("details %+v", b.Error.Details)
	}

	res = e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "is_batched": true, "min_request_interval": 0,
		"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"request": map[string]any{"url": rcv.URL + "/hook", "method": "POST", "headers": map[string]string{"X-Api-Key": "k"},
			"format": "json", "content": json.RawMessage(`{"type": "orders", "data": "{(data)}"}`)},
	}))
	res.wantStatus(t, http.StatusOK)
	var o outletAnswer
	res.decode(t, &o)
	oid := o.Outlet.ID
	golden(t, "outlet", res.body, oid, "<outlet_id>", rcv.URL, "<receiver>")
	res = e.do(http.MethodGet, path+oid+"/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	golden(t, "outlet", res.body, oid, "<outlet_id>", rcv.URL, "<receiver>")
	var d datatargetAnswer
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(admin)).decode(t, &d)
	if len(d.Datatarget.Outlets) != 1 || !strings.Contains(string(d.Datatarget.Outlets[0]), oid) {
		t.Errorf("the datatarget lists %s", d.Datatarget.Outlets)
	}
	e.do(http.MethodGet, path+"nope/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodPost, "/api/datatargets/nope/outlets/", bearer(admin), jsonBody(map[string]any{"outlet_type": "webhook", "request": map[string]string{"url": "http://x"}})).wantError(t, http.StatusNotFound, "not_found")

	// Deliver.
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
	msgs := make([]map[string]int, 250)
	for i := range msgs {
		msgs[i] = map[string]int{"n": i + 1}
	}
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": msgs})).wantStatus(t, http.StatusOK)
	deadline := time.Now().Add(10 * time.Second)
	for o.Outlet.LastDeliveredMessageNumber < 250 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		e.do(http.MethodGet, path+oid+"/", bearer(admin)).decode(t, &o)
	}
	if o.Outlet.LastDeliveredMessageNumber != 250 || o.Outlet.DeliveredBatchCount != 3 || !o.Outlet.Enabled {
		t.Fatalf("outlet after delivery %+v", o.Outlet)
	}

	// The log: a failure, then three batches; newest first by default.
	res = e.do(http.MethodGet, path+oid+"/log/", bearer(admin), withQuery("limit", "3"))
	res.wantStatus(t, http.StatusOK)
	var page logAnswer
	res.decode(t, &page)
	if page.Order != "descending" || page.Limit != 3 || page.TotalCount != 4 || len(page.Entries) != 3 ||
		page.Entries[0].EntryKey != "4" || page.Entries[2].EntryNumber != 2 || page.Entries[0].HTTPRequest != nil {
		t.Errorf("first page: %s", res.body)
	}
	next, err := url.Parse(page.NextURL)
	if err != nil || next.Scheme != "http" || next.Host != acmeHost || next.Query().Get("from") != "1" {
		t.Fatalf("next_url %q", page.NextURL)
	}
	res = e.do(http.MethodGet, next.Path, bearer(admin), withQuery("from", "1"), withQuery("limit", "3"))
	page = logAnswer{}
	res.decode(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].Status != "FAIL" || page.NextURL != "" {
		t.Errorf("last page: %s", res.body)
	}
	res = e.do(http.MethodGet, path+oid+"/log", bearer(admin), withQuery("order", "ascending"), withQuery("from", "2"), withQuery("limit", "2"))
	page = logAnswer{}
	res.decode(t, &page)
	if page.Order != "ascending" || len(page.Entries) != 2 || page.Entries[0].EntryNumber != 2 || !strings.Contains(page.NextURL, "from=4") {
		t.Errorf("ascending: %s", res.body)
	}
	e.do(http.MethodGet, path+oid+"/log/", bearer(admin), withQuery("order", "newest")).wantError(t, http.StatusBadRequest, "invalid_request")
	e.do(http.MethodGet, path+oid+"/log/", bearer(admin), withQuery("limit", "0")).wantError(t, http.StatusBadRequest, "invalid_request")
	e.do(http.MethodGet, path+"nope/log/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")

	// One entry, with the raw texts.
	res = e.do(http.MethodGet, path+oid+"/log/1/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var entry struct {
		Entry struct {
			Status, FailReason, HTTPRequest, HTTPReply string
			HTTPStatus                                 int  `json:"http_status"`
			HTTPRequestAvailable                       bool `json:"http_request_available"`
			BatchNumber                                int  `json:"batch_number"`
			BatchSize                                  int  `json:"batch_size"`
			FirstMessageNumber                         int  `json:"first_message_number"`
		} `json:"entry"`
	}
	res.decode(t, &entry)
	en := entry.Entry
	if en.Status != "FAIL" || en.HTTPStatus != 500 || !en.HTTPRequestAvailable || en.BatchNumber != 1 || en.BatchSize != 100 || en.FirstMessageNumber != 1 {
		t.Errorf("entry 1: %s", res.body)
	}
	var raw map[string]map[string]any
	res.decode(t, &raw)
	req, _ := raw["entry"]["http_request"].(string)
	reply, _ := raw["entry"]["http_reply"].(string)
	if !strings.HasPrefix(req, "POST /hook HTTP/1.1\r\n") || !strings.Contains(req, "\r\nwebhook-signature: ****\r\n") || !strings.Contains(req, "\r\nX-Api-Key: ****\r\n") ||
		!strings.Contains(req, `{"type":"orders","data":[{"n":1},`) || !strings.HasPrefix(reply, "HTTP/1.1 500 Internal Server Error\r\n") {
		t.Errorf("raw texts:\n%s\n%s", req, reply)
	}
	e.do(http.MethodGet, path+oid+"/log/99/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, path+oid+"/log/x/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
}
