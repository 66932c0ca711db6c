package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/readmodels"
)

var benchMessages = flag.Int("bench.messages", 1_000_000, "messages posted, retrieved and delivered by BenchmarkDatatargets")

// BenchmarkDatatargets posts -bench.messages messages (about 200 bytes
// each) through the HTTP API in posts of 1,000, retrieves them all in
// pages of 10,000, and delivers them through a batched webhook outlet (100
// per request) to a local sink, on a durable PostgreSQL server (fsync on).
// It reports the three rates; run it with -benchtime 1x.
func BenchmarkDatatargets(b *testing.B) {
	ctx := context.Background()
	pool := benchDatabase(b)
	store := postgres.New(pool, projectors.InlineHook(), projections.CommitPublisher{})
	cmds := commands.New(store, time.Now, commands.WithSealer(testKeys(b).Keyring))
	co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "bench", Settings: company.Settings{Name: "Bench"}})
	if err != nil {
		b.Fatal(err)
	}
	p := access.Principal{CompanyID: co.ID, UserID: "bench", Roles: []access.Role{access.RoleAdmin}}
	_, token, err := cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: p})
	if err != nil {
		b.Fatal(err)
	}
	keyring, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		b.Fatal(err)
	}
	srv, err := api.NewServer(api.Config{BaseDomain: "localhost", RateLimit: math.Inf(1), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, app.Application{
		Commands: app.Commands{Commands: cmds, Authenticator: authn.New(pool, readmodels.NewAccess(pool))},
		Queries: app.Queries{Companies: readmodels.NewCompanies(pool, "localhost"), Access: readmodels.NewAccess(pool),
			Datatargets: readmodels.NewDatatargets(pool, testKeys(b)), Customers: readmodels.NewCustomers(pool),
			CustomerHistory: readmodels.NewCustomerHistory(store, pool, crypto.KeyStore{Keyring: keyring})},
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	call := func(method, path string, body []byte) []byte {
		req, _ := http.NewRequest(method, hs.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := hs.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, res.StatusCode, out)
		}
		return out
	}
	var created struct {
		Datatarget struct{ ID string } `json:"datatarget"`
	}
	if err := json.Unmarshal(call(http.MethodPost, "/api/datatargets/", []byte(`{"datatarget_type":"messages","name":"bench"}`)), &created); err != nil {
		b.Fatal(err)
	}
	dt := "/api/datatargets/" + created.Datatarget.ID
	total := *benchMessages

	for b.Loop() {
		// Post.
		start := time.Now()
		for n := 0; n < total; n += 1000 {
			call(http.MethodPost, dt+"/post/", benchPost(n, min(1000, total-n)))
		}
		postRate := float64(total) / time.Since(start).Seconds()

		// Retrieve.
		start = time.Now()
		var after int64
		for got := 0; got < total; {
			var page struct {
				LastMessageNumber int64             `json:"last_message_number"`
				Messages          []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(call(http.MethodGet, fmt.Sprintf("%s/retrieve/?after=%d&limit=10000", dt, after), nil), &page); err != nil {
				b.Fatal(err)
			}
			got += len(page.Messages)
			after = page.LastMessageNumber
		}
		retrieveRate := float64(total) / time.Since(start).Seconds()

		// Deliver.
		var requests, bytesIn atomic.Int64
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			bytesIn.Add(n)
			requests.Add(1)
		}))
		o, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: created.Datatarget.ID, Spec: datatarget.OutletSpec{
			Type: "webhook", IsBatched: true, Request: datatarget.Request{URL: sink.URL + "/sink", Content: json.RawMessage(`{"messages":"{(data)}"}`)},
		}})
		if err != nil {
			b.Fatal(err)
		}
		d, err := delivery.New(delivery.Config{Pool: pool, Keys: testKeys(b), Disable: cmds.DisableOutlet.BySystem,
			AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, PollInterval: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		dctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		start = time.Now()
		go func() { defer close(done); _ = d.Run(dctx) }()
		for {
			var last int64
			_ = pool.QueryRow(ctx, `SELECT coalesce(max(last_delivered_message_number), 0) FROM outlet_deliveries WHERE outlet_id = $1`, o.ID).Scan(&last)
			if last >= int64(total) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		deliverRate := float64(total) / time.Since(start).Seconds()
		stop()
		<-done
		sink.Close()

		b.ReportMetric(postRate, "posted-msgs/s")
		b.ReportMetric(retrieveRate, "retrieved-msgs/s")
		b.ReportMetric(deliverRate, "delivered-msgs/s")
		perBatchReads(b, pool, o.ID, deliverRate)
		var sizes string
		_ = pool.QueryRow(ctx, `SELECT format('events %s, datatarget_messages %s, outlet_log %s',
			pg_size_pretty(pg_total_relation_size('events')), pg_size_pretty(pg_total_relation_size('datatarget_messages')),
			pg_size_pretty(pg_total_relation_size('outlet_log')))`).Scan(&sizes)
		b.Logf("%d messages: %d requests, %d bytes to the sink; %s", total, requests.Load(), bytesIn.Load(), sizes)
	}
}

// perBatchReads measures, on the benchmark's server and data, two reads
// each batch makes besides its messages: the look-up of a parked batch to
// redeliver (the query of nextRedelivery, parking.go; none waits, the
// common case), which the failure policy added, and the opening of the
// outlet's sealed credentials (loadOutlet), which sealing added; and
// reports each in microseconds and as a share of the time of a batch of
// 100 at deliverRate.
func perBatchReads(b *testing.B, pool *pgxpool.Pool, outletID string, deliverRate float64) {
	ctx := context.Background()
	const n = 2000
	start := time.Now()
	for range n {
		var id, first, last int64
		err := pool.QueryRow(ctx, `SELECT id, first_message_number, last_message_number FROM outlet_parked
			WHERE outlet_id = $1 AND redeliver ORDER BY id LIMIT 1`, outletID).Scan(&id, &first, &last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			b.Fatal(err)
		}
	}
	lookup := time.Since(start).Seconds() / n
	var key, box []byte
	if err := pool.QueryRow(ctx, `SELECT credentials_key, sealed_credentials FROM datatarget_outlets WHERE id = $1`, outletID).Scan(&key, &box); err != nil {
		b.Fatal(err)
	}
	sealed, keys := datatarget.SealedCredentials{Key: key, Sealed: box}, testKeys(b)
	start = time.Now()
	for range n {
		if _, err := sealed.Open(keys.Keyring, outletID); err != nil {
			b.Fatal(err)
		}
	}
	open := time.Since(start).Seconds() / n
	batch := 100 / deliverRate
	b.ReportMetric(lookup*1e6, "parked-lookup-us/batch")
	b.ReportMetric(100*lookup/batch, "parked-lookup-%-of-batch")
	b.ReportMetric(open*1e6, "credentials-open-us/batch")
	b.ReportMetric(100*open/batch, "credentials-open-%-of-batch")
}

// benchPost is the body of a post of n messages numbered from first+1.
func benchPost(first, n int) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		k := first + i + 1
		fmt.Fprintf(&buf, `{"order_id":"A-%07d","customer_id":"C-%06d","status":"shipped","total":%d,"currency":"EUR","lines":[{"sku":"SKU-%04d","qty":%d,"price":1999}],"shipped_at":"2025-06-01T12:00:00Z"}`,
			k, k%100000, 1999*(1+k%3), k%5000, 1+k%3)
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

// benchDatabase is a fresh database on a durable server.
func benchDatabase(b *testing.B) *pgxpool.Pool { return pgtest.DurablePool(b) }
