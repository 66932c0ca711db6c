package readmodels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/readmodels"
)

func TestDatatargetsQueries(t *testing.T) {
	ctx := context.Background()
	pool, cmds := setup(t)
	acme, globex := mustCompany(t, cmds, "acme"), mustCompany(t, cmds, "globex")
	p := access.System(acme.ID)
	d, err := cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: d.ID, Spec: datatarget.OutletSpec{
		Type: "webhook", IsBatched: true, Request: datatarget.Request{URL: "https://example.com/", Headers: map[string]string{"X-Key": "k"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []json.RawMessage
	for i := range 25 {
		msgs = append(msgs, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+1)))
	}
	if _, err := cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	q := readmodels.NewDatatargets(pool, newKeys(t))

	got, err := q.Datatarget(ctx, acme.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastMessageNumber != 25 || len(got.Outlets) != 1 || got.Outlets[0].ID != o.ID || got.Outlets[0].Hints.Headers["X-Key"] != "*" ||
		len(got.Outlets[0].Request.Headers) != 0 {
		t.Errorf("datatarget %+v", got)
	}
	list, err := q.Datatargets(ctx, acme.ID)
	if err != nil || len(list) != 1 || len(list[0].Outlets) != 1 {
		t.Errorf("list %+v %v", list, err)
	}
	if list, _ := q.Datatargets(ctx, globex.ID); len(list) != 0 {
		t.Errorf("globex sees %d datatargets", len(list))
	}
	if _, err := q.Datatarget(ctx, globex.ID, d.ID); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("another company's datatarget: %v", err)
	}

	page, err := q.Messages(ctx, acme.ID, d.ID, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 10 || string(page.Messages[0]) != `{"n":11}` || string(page.Messages[9]) != `{"n":20}` || page.LastMessageNumber != 20 {
		t.Errorf("page after 10: %d messages, last %d, first %s", len(page.Messages), page.LastMessageNumber, page.Messages[0])
	}
	if page, err := q.Messages(ctx, acme.ID, d.ID, 25, 10); err != nil || len(page.Messages) != 0 || page.LastMessageNumber != 0 {
		t.Errorf("nothing after 25: %+v %v", page, err)
	}
	if _, err := q.Messages(ctx, globex.ID, d.ID, 0, 10); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("another company's queue: %v", err)
	}

	// The delivery workers write the log; five attempts of which the
	// second failed.
	if _, err := pool.Exec(ctx, `INSERT INTO outlet_deliveries (outlet_id, company_id, datatarget_id, last_delivered_message_number,
		delivered_batch_count, entry_count) VALUES ($1, $2, $3, 25, 4, 5)`, o.ID, acme.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	date := time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC)
	for n := 1; n <= 5; n++ {
		status, reason := datatarget.StatusOK, ""
		if n == 2 {
			status, reason = datatarget.StatusFail, "the receiver answered 500"
		}
		if _, err := pool.Exec(ctx, `INSERT INTO outlet_log (outlet_id, entry_number, company_id, date, batch_number, batch_size,
			first_message_number, status, http_status, request_time_ms, fail_reason, http_request_available, http_request, http_reply)
			VALUES ($1, $2, $3, $4, $5, 5, $6, $7, 200, 3, $8, true, 'POST / HTTP/1.1', 'HTTP/1.1 200 OK')`,
			o.ID, n, acme.ID, date, min(n, 4), 1+5*(min(n, 4)-1), status, reason); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := q.Outlet(ctx, acme.ID, d.ID, o.ID); got.Progress != (datatarget.Progress{LastDeliveredMessageNumber: 25, DeliveredBatchCount: 4, State: "delivering"}) {
		t.Errorf("progress %+v", got.Progress)
	}
	numbers := func(p readmodels.LogPage) []int64 {
		var out []int64
		for _, e := range p.Entries {
			out = append(out, e.EntryNumber)
		}
		return out
	}
	tests := []struct {
		name      string
		q         readmodels.LogQuery
		want      []int64
		next      int64
		wantTotal int64
	}{
		{"newest first", readmodels.LogQuery{Limit: 2, Descending: true}, []int64{5, 4}, 3, 5},
		{"from 3 down", readmodels.LogQuery{Limit: 2, From: 3, Descending: true}, []int64{3, 2}, 1, 5},
		{"last page down", readmodels.LogQuery{Limit: 2, From: 1, Descending: true}, []int64{1}, 0, 5},
		{"oldest first", readmodels.LogQuery{Limit: 3}, []int64{1, 2, 3}, 4, 5},
		{"last page up", readmodels.LogQuery{Limit: 3, From: 4}, []int64{4, 5}, 0, 5},
	}
	for _, tt := range tests {
		tt.q.CompanyID, tt.q.DatatargetID, tt.q.OutletID = acme.ID, d.ID, o.ID
		page, err := q.Log(ctx, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, numbers(page)); diff != "" || page.Next != tt.next || page.TotalCount != tt.wantTotal {
			t.Errorf("%s: next %d, total %d, entries (-want +got):\n%s", tt.name, page.Next, page.TotalCount, diff)
		}
	}
	if _, err := q.Log(ctx, readmodels.LogQuery{CompanyID: globex.ID, DatatargetID: d.ID, OutletID: o.ID, Limit: 1}); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("another company's log: %v", err)
	}
	e, err := q.LogEntry(ctx, acme.ID, d.ID, o.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != datatarget.StatusFail || e.HTTPRequest != "POST / HTTP/1.1" || !e.Date.Equal(date) || e.FirstMessageNumber != 6 {
		t.Errorf("entry 2: %+v", e)
	}
	if _, err := q.LogEntry(ctx, acme.ID, d.ID, o.ID, 6); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("entry 6: %v", err)
	}
}

// newKeys returns keys under a fresh master key.
func newKeys(t *testing.T) crypto.KeyStore {
	t.Helper()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	return crypto.KeyStore{Keyring: kr}
}
