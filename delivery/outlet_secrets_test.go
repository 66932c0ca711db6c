package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/projectors"
)

// TestOutletSecretsNotOnDisk: an outlet's signing secret and header
// values, as created and as replaced by a change, reach the receiver (the
// deliverer opens them to sign and send: the reference library verifies
// every request) but stand in no data file of any table after a VACUUM,
// dead row versions included: not in the event log, the read model of
// outlets or the outlet log's raw texts. The outlet answers them in hint
// form, and the log's raw requests are stored (sealed) with them masked.
func TestOutletSecretsNotOnDisk(t *testing.T) {
	const (
		secret1 = "whsec_c2VhbGVkLXNlY3JldC1vbmUtb2YtdGhlLW91dGxldA=="
		secret2 = "whsec_c2VhbGVkLXNlY3JldC10d28tb2YtdGhlLW91dGxldA=="
		apiKey1 = "apikey-first-7c41d0e9b2"
		apiKey2 = "apikey-second-58f3a6c1e4"
		bearer  = "Bearer tok-a1b2c3d4e5f6a7b8c9d0"
	)
	var mu sync.Mutex
	verifier := map[string]*standardwebhooks.Webhook{}
	for _, s := range []string{secret1, secret2} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		verifier[s] = wh
	}
	secret, apiKey := secret1, apiKey1
	var received int
	srv := newReceiver(t)
	srv.setBehaviour(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if err := verifier[secret].Verify(body, r.Header); err != nil {
			t.Errorf("signature with %s: %v", secret, err)
		}
		if got := r.Header.Get("X-Api-Key"); got != apiKey || r.Header.Get("Authorization") != bearer {
			t.Errorf("headers %v, want X-Api-Key %s", r.Header, apiKey)
		}
		received++
		return false
	})

	h := newHarness(t)
	o := h.outlet(srv.url(), true, func(s *datatarget.OutletSpec) {
		s.Secret, s.Request.Headers = secret1, map[string]string{"X-Api-Key": apiKey1, "Authorization": bearer}
	})
	h.post(3)
	stop := h.run(h.config())
	waitFor(t, 10*time.Second, "the first delivery", func() bool { mu.Lock(); defer mu.Unlock(); return received == 1 })
	stop()

	mu.Lock()
	secret, apiKey = secret2, apiKey2
	mu.Unlock()
	s2 := secret2
	headers := map[string]string{"X-Api-Key": apiKey2, "Authorization": bearer}
	h.change(o.ID, datatarget.OutletPatch{Secret: &s2, Request: &datatarget.RequestPatch{Headers: &headers}})
	h.post(3)
	h.run(h.config())
	waitFor(t, 10*time.Second, "the delivery after the change", func() bool { mu.Lock(); defer mu.Unlock(); return received == 2 })

	shown := h.outletState(o.ID)
	answer, _ := json.Marshal(shown.RequestFor(h.p))
	if shown.Hints.Secret != "whse******************************************dA==" || !strings.Contains(string(answer), `"X-Api-Key":"apik****************c1e4"`) {
		t.Errorf("the outlet shows %s and the secret %q", answer, shown.Hints.Secret)
	}
	for _, e := range h.entries(o.ID) {
		// As stored (opened), and as shown.
		for _, raw := range []string{e.HTTPRequest, e.For(h.p).HTTPRequest} {
			if !strings.Contains(raw, "\r\nX-Api-Key: ****\r\n") || !strings.Contains(raw, "\r\nAuthorization: ****\r\n") {
				t.Errorf("entry %d holds the request\n%s", e.EntryNumber, raw)
			}
		}
	}

	ctx := context.Background()
	if _, err := h.pool.Exec(ctx, `VACUUM`); err != nil {
		t.Fatal(err)
	}
	rows, err := h.pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil || len(tables) < 20 {
		t.Fatalf("tables %v: %v", tables, err)
	}
	for _, clear := range []string{secret1, secret2, strings.TrimPrefix(secret1, datatarget.SecretPrefix), apiKey1, apiKey2, "tok-a1b2c3d4e5f6a7b8c9d0"} {
		if files := pgtest.FilesHolding(t, h.pool, []byte(clear), tables...); len(files) > 0 {
			t.Errorf("%q stands in clear in %v", clear, files)
		}
	}
}

// TestOutletStoredInClearStillDelivers: an outlet whose OutletCreated was
// written before credentials were sealed (its secret and headers in
// clear, in the log and so in the read model) keeps delivering, signed
// and with its headers, and is answered in hint form; its next change
// seals them in the log and the read model, and delivery goes on.
func TestOutletStoredInClearStillDelivers(t *testing.T) {
	const secret, apiKey = "whsec_c3RvcmVkLWluLWNsZWFyLWJlZm9yZS1zZWFsaW5n", "apikey-stored-in-clear-31d7"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var received int
	srv := newReceiver(t)
	srv.setBehaviour(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if err := wh.Verify(body, r.Header); err != nil || r.Header.Get("X-Api-Key") != apiKey {
			t.Errorf("request %v: signature %v", r.Header, err)
		}
		received++
		return false
	})
	h := newHarness(t)
	ctx := context.Background()
	const id = "0192f0c0c0de7000800000000000c1ea"
	old := map[string]any{"id": id, "datatarget_id": h.dt.ID, "outlet_type": "webhook",
		"request": map[string]any{"url": srv.url(), "method": "POST", "headers": map[string]string{"X-Api-Key": apiKey}, "format": "json",
			"content": `{"source": "clientele", "items": "{(data)}"}`},
		"is_batched": true, "max_batch_size": 100, "min_request_interval_ms": 0, "secret": secret, "enabled": true,
		"created_at": time.Now().UTC(), "created_by": "users/u1"}
	store := postgres.New(h.pool, projectors.InlineHook())
	if _, err := store.Append(ctx, eventstore.Commit{Metadata: commands.Metadata(ctx, h.p, h.p.CompanyID),
		Streams: []eventstore.StreamAppend{{StreamID: datatarget.OutletStream(h.p.CompanyID, id), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.OutletCreatedType, old)}}}}); err != nil {
		t.Fatal(err)
	}
	sealed := func() bool {
		var yes bool
		if err := h.pool.QueryRow(ctx, `SELECT sealed_credentials IS NOT NULL AND secret NOT LIKE '%' || $2 || '%'
			FROM datatarget_outlets WHERE id = $1`, id, secret[10:]).Scan(&yes); err != nil {
			t.Fatal(err)
		}
		return yes
	}
	if sealed() {
		t.Fatal("the outlet's row is sealed before any change")
	}
	h.post(2)
	stop := h.run(h.config())
	waitFor(t, 10*time.Second, "the delivery", func() bool { mu.Lock(); defer mu.Unlock(); return received == 1 })
	stop()
	if o := h.outletState(id); o.Secret != "" || o.Request.Headers != nil || o.Hints.Headers["X-Api-Key"] != "apik*******************31d7" || !o.HasSecret() {
		t.Errorf("answered %+v", o)
	}

	interval := int64(1)
	h.change(id, datatarget.OutletPatch{MinRequestInterval: &interval})
	if !sealed() {
		t.Error("the outlet's row is not sealed after a change")
	}
	evs, err := store.ReadStream(ctx, datatarget.OutletStream(h.p.CompanyID, id), 1)
	if err != nil || len(evs) != 1 || strings.Contains(string(evs[0].Data), apiKey) || strings.Contains(string(evs[0].Data), secret) {
		t.Errorf("the change's event: %v %v", evs, err)
	}
	h.post(2)
	h.run(h.config())
	waitFor(t, 10*time.Second, "the delivery after the change", func() bool { mu.Lock(); defer mu.Unlock(); return received == 2 })
}
