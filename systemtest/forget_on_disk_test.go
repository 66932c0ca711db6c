package systemtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// readModelTables are the tables that may keep a customer's values in
// clear, for search and retrieval: the forgetting rewrites them, and
// their dead row versions keep the old values until PostgreSQL reuses
// the space (docs/retrieval.md, "Where personal bytes may remain on
// disk").
var readModelTables = map[string]bool{
	"customers": true, "datasync_messages": true, "campaign_sync_messages": true, "segment_sync_messages": true,
	"activity_events": true, "activity_counters": true, "activity_deleted": true,
	"sales": true, "products": true, "shops": true,
}

// TestForgetLeavesNoPersonalByteOnDisk: a customer's email that went
// through an upload (staged, then imported), a datasync outlet that
// delivered it and one whose receiver refused it, is, once the customer
// is forgotten and after a plain VACUUM, in no data file of any table
// but the read models: not in the event log, the staged uploads or the
// outlet log, dead row versions included.
func TestForgetLeavesNoPersonalByteOnDisk(t *testing.T) {
	e := withDatasync(t)
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	const email = "zq-on-disk-7731@example.org"
	upload := func(body string) {
		t.Helper()
		run := e.mustUpload(admin, "/api/customers/upload/", rawBody(body))
		if a, res := e.waitRun(admin, run); a.Import.State != "completed" || a.Import.Rejected != 0 {
			t.Fatalf("run: %s", res.body)
		}
		e.waitProjections()
	}
	dt := e.createDatasync(admin, "everything", map[string]any{"datatype": "customers"})["id"].(string)
	rcv := newSink(t)
	delivered := e.createOutlet(admin, dt, rcv.srv.URL, true)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	t.Cleanup(refusing.Close)
	failed := e.createOutlet(admin, dt, refusing.URL, false)
	e.runDeliverer()

	upload(`[{"external_id": "DISK-1", "email": "` + email + `", "first_name": "Ondisk"}]`)
	e.waitDelivered(delivered, 1)
	e.waitAttempts(failed, 1)
	// The attempt's raw texts open through the API, and carry the email.
	res := e.do(http.MethodGet, "/api/datatargets/"+dt+"/outlets/"+failed+"/log/1/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var entry struct {
		Entry struct {
			Status      string `json:"status"`
			HTTPRequest string `json:"http_request"`
		} `json:"entry"`
	}
	res.decode(t, &entry)
	if entry.Entry.Status != "FAIL" || !strings.Contains(entry.Entry.HTTPRequest, email) {
		t.Fatalf("the failed attempt: %s", res.body)
	}

	upload(`[{"external_id": "DISK-1", "is_forgotten": true}]`)
	var tables []string
	rows, err := e.pool.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !readModelTables[name] {
			tables = append(tables, name)
		}
	}
	if err := rows.Err(); err != nil || len(tables) < 20 {
		t.Fatalf("tables %v: %v", tables, err)
	}
	if _, err := e.pool.Exec(context.Background(), `VACUUM`); err != nil {
		t.Fatal(err)
	}
	if files := pgtest.FilesHolding(t, e.pool, []byte(email), tables...); len(files) > 0 {
		t.Errorf("after the forgetting and a VACUUM, the email stands in %v", files)
	}
}

// waitAttempts waits until the outlet has logged n attempts.
func (e *env) waitAttempts(outletID string, n int) {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var got int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM outlet_log WHERE outlet_id = $1`, outletID).Scan(&got); err != nil {
			e.t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("outlet %s logged %d attempts of %d", outletID, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
