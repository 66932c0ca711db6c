package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/projections/segments"
)

// asyncProjectors are the async projections the test service runs: those
// of retrieval, of the campaign statistics and of segment members.
func asyncProjectors(keys crypto.KeyStore) []projections.Projector {
	return []projections.Projector{retrieval.NewCustomers(keys), retrieval.NewProducts(), retrieval.NewEvents(keys),
		retrieval.NewSales(keys), campaignstats.NewCampaignStats(), segments.NewMembers(keys, postgres.EventLog{})}
}

// projectionStatus is the overview's lag, as serve gives it
// (projections.Runtime.CompanyStatus).
func projectionStatus(pool *pgxpool.Pool, store *postgres.Store, async []projections.Projector) app.ProjectionStatus {
	return func(ctx context.Context, companyID string) ([]projections.ProjectionStatus, error) {
		return projections.CompanyStatus(ctx, pool, store, postgres.EventLog{}, async, companyID)
	}
}

func (e *env) adminPrincipal() access.Principal {
	return access.Principal{CompanyID: e.acme.ID, UserID: e.admin.ID, OwnerID: access.UserOwner(e.admin.ID), Roles: []access.Role{access.RoleAdmin}}
}

// failingOutlet creates a messages datatarget of acme with n messages and
// a webhook outlet to a test server that answers 500 to every request,
// runs the delivery worker as serve does, and waits until the worker has
// recorded a failed attempt. The outlet's request carries a credential
// header (X-Api-Key), which only admins may read.
func (e *env) failingOutlet(n int) (datatargetID, outletID string) {
	e.t.Helper()
	ctx := context.Background()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("the receiver is down"))
	}))
	e.t.Cleanup(receiver.Close)
	p := e.adminPrincipal()
	d, err := e.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "ERP orders"})
	if err != nil {
		e.t.Fatal(err)
	}
	var msgs []json.RawMessage
	for i := range n {
		msgs = append(msgs, json.RawMessage(`{"order": `+itoa(i+1)+`, "note": "message `+itoa(i+1)+`"}`))
	}
	if n > 0 {
		if _, err := e.cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: msgs}); err != nil {
			e.t.Fatal(err)
		}
	}
	o, err := e.cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: d.ID, Spec: datatarget.OutletSpec{
		Type: "webhook", Request: datatarget.Request{URL: receiver.URL + "/hook?key=s3cret", Method: "POST",
			Headers: map[string]string{"X-Api-Key": "very-secret-key"}},
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.deliver()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var failed int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM outlet_log WHERE outlet_id = $1 AND status = 'FAIL'`, o.ID).Scan(&failed)
		if err != nil {
			e.t.Fatal(err)
		}
		if failed > 0 {
			return d.ID, o.ID
		}
		if time.Now().After(deadline) {
			e.t.Fatal("no failed attempt recorded after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// apiToken creates a token of the admin's own, as POST /api/access-tokens/
// would.
func (e *env) apiToken() string {
	e.t.Helper()
	_, value, err := e.cmds.CreateAccessToken.Handle(context.Background(), commands.CreateAccessToken{Principal: e.adminPrincipal()})
	if err != nil {
		e.t.Fatal(err)
	}
	return value
}

// apiCall sends a JSON request to the API of acme with token.
func (e *env) apiCall(token, method, path, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = acmeHost
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = io.Copy(&b, res.Body)
	return res.StatusCode, b.String()
}

// waitPage loads a page until it contains want.
func (c *client) waitPage(path, want string) string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := c.do(http.MethodGet, path, nil, nil)
		if strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("GET %s never showed %q; last:\n%s", path, want, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCount waits until a read model's table holds n rows of the
// company.
func (e *env) waitCount(co company.Company, table string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE company_id = $1`, co.ID).Scan(&got); err != nil {
			e.t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d rows in %s after 30 s, want %d", got, table, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
