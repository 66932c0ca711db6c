package systemtest_test

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
)

// TestDatatargetRetention: an admin sets a datatarget's retention of
// delivered messages (staff may not; a negative one is 422). Once pruned,
// retrieval numbers the kept messages as before, answers an after below
// the kept range 410 gone naming the first message kept, and the outlet's
// position is unchanged.
func TestDatatargetRetention(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	path := "/api/datatargets/" + id + "/"
	e.do(http.MethodPatch, path, bearer(staff), jsonBody(map[string]any{"message_retention_days": 1})).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"message_retention_days": -1})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	res := e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"message_retention_days": 1}))
	res.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(res.body), `"message_retention_days":1`) {
		t.Fatalf("the datatarget after the patch: %s", res.body)
	}

	rcv := newGatedSink(t)
	oid := e.createOutlet(admin, id, rcv.srv.URL+"/hook", false)
	e.postNumbered(admin, id, 1, 30)
	e.runDeliverer()
	e.waitDelivered(oid, 30)

	// Two days later, the pruner of a serve process.
	dl, err := delivery.New(delivery.Config{Pool: e.pool, Keys: e.keys, Disable: e.cmds.DisableOutlet.BySystem,
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Now:        func() time.Time { return time.Now().Add(48 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := dl.Prune(context.Background()); err != nil || p.Messages != 29 {
		t.Fatalf("pruned %+v, %v; want 29 messages", p, err)
	}

	retrieve := path + "retrieve/"
	for _, after := range []string{"0", "28"} {
		body := e.do(http.MethodGet, retrieve, bearer(admin), withQuery("after", after)).wantError(t, http.StatusGone, "gone")
		if !strings.Contains(body.Error.Message, "the first message kept is 30") || !strings.Contains(body.Error.Message, "after=29") {
			t.Errorf("after=%s: %q", after, body.Error.Message)
		}
	}
	res = e.do(http.MethodGet, retrieve, bearer(admin), withQuery("after", "29"))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"last_message_number":30,"messages":[{"n":30}]}` {
		t.Errorf("after=29: %s", res.body)
	}
	res = e.do(http.MethodGet, retrieve, bearer(admin), withQuery("after", "30"))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"messages":[]}` {
		t.Errorf("after=30: %s", res.body)
	}
	var o outletAnswer
	e.do(http.MethodGet, path+"outlets/"+oid+"/", bearer(admin)).decode(t, &o)
	if o.Outlet.LastDeliveredMessageNumber != 30 {
		t.Errorf("the outlet after pruning: %+v", o.Outlet)
	}
	var d datatargetAnswer
	e.do(http.MethodGet, path, bearer(admin)).decode(t, &d)
	if d.Datatarget.LastMessageNumber != 30 {
		t.Errorf("the datatarget after pruning numbers up to %d", d.Datatarget.LastMessageNumber)
	}
	e.postNumbered(admin, id, 31, 31)
	e.waitDelivered(oid, 31)
	res = e.do(http.MethodGet, retrieve, bearer(admin), withQuery("after", "29"))
	if string(res.body) != `{"last_message_number":31,"messages":[{"n":30},{"n":31}]}` {
		t.Errorf("after a new post: %s", res.body)
	}
}
