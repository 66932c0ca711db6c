package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestDatabaseFailover runs serve on PostgreSQL with a synchronous
// standby, reached through one connection string naming both
// (target_session_attrs=read-write), kills the primary while customers
// are applied and a webhook outlet delivers, and promotes the standby
// (pg_ctl promote; the old primary does not come back). serve finds the
// new primary by itself, with no restart: in between it answers 503 with
// Retry-After, never 500; every upload it acknowledged completes with
// each customer applied once; every message posted is delivered in
// order.
func TestDatabaseFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two private PostgreSQL servers")
	}
	if raceEnabled {
		// A minute under the race detector; make test runs this package
		// without it, and the code it drives is the race-tested code of
		// every other serve test.
		t.Skip("run without the race detector (make test does)")
	}
	start := time.Now()
	primary := pgtest.NewServer(t)
	standby := primary.Standby()
	svc := startOutageService(t, pgtest.MultiHostURL(primary, standby))
	defer svc.stop()
	c, rcv, dt, poster, logs, exited := svc.c, svc.rcv, svc.dt, svc.poster, svc.logs, svc.exited

	perRun, runs := 5_000, 2
	var runIDs []string
	for r := range runs {
		res := c.call("POST", "/api/customers/upload/", "application/json", customersBody(r*perRun, perRun))
		if res.status != 200 {
			t.Fatalf("upload %d: %d %s", r, res.status, res.body)
		}
		runIDs = append(runIDs, res.json(t)["run_id"].(string))
	}
	accepted := func() int {
		n := 0
		for _, id := range runIDs {
			n += c.importRun(id).accepted
		}
		return n
	}
	c.waitFor("chunks being applied and messages delivered", time.Minute, func() (bool, string) {
		return accepted() > 0 && rcv.requests() > 0, fmt.Sprintf("%d accepted, %d requests received", accepted(), rcv.requests())
	})
	applied := accepted()
	if applied >= perRun*runs {
		t.Fatal("every customer was applied before the primary was lost; the test proves nothing")
	}

	lost := time.Now()
	primary.Crash()
	t.Logf("killed the primary with %d of %d customers applied, %d webhook requests received", applied, perRun*runs, rcv.requests())
	// Until the standby is promoted there is no primary: serve says so.
	c.waitFor("readyz 503", time.Minute, func() (bool, string) {
		res := c.call("GET", "/readyz", "", nil)
		return res.status == http.StatusServiceUnavailable, fmt.Sprintf("%d %s", res.status, res.body)
	})
	if res := c.call("POST", "/api/customers/upload/", "application/json", customersBody(perRun*runs, 10)); res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" {
		t.Errorf("an upload with no primary: %d %s (Retry-After %q), want 503 with Retry-After", res.status, res.body, res.header.Get("Retry-After"))
	}
	standby.Promote()
	promoted := time.Now()
	c.waitFor("readyz 200 on the promoted standby", time.Minute, func() (bool, string) {
		res := c.call("GET", "/readyz", "", nil)
		return res.status == 200, fmt.Sprintf("%d %s", res.status, res.body)
	})
	t.Logf("ready %v after the promotion; no primary for %v in all", time.Since(promoted).Round(time.Millisecond), time.Since(lost).Round(time.Millisecond))
	select {
	case err := <-exited:
		t.Fatalf("serve exited during the failover: %v", err)
	default:
	}

	// An upload after the failover is acknowledged and applied too.
	res := c.call("POST", "/api/customers/upload/", "application/json", customersBody(perRun*runs, 100))
	if res.status != 200 {
		t.Fatalf("an upload after the failover: %d %s", res.status, res.body)
	}
	runIDs = append(runIDs, res.json(t)["run_id"].(string))
	want := perRun*runs + 100
	c.waitFor("every import run completed", 5*time.Minute, func() (bool, string) {
		var states []string
		done := true
		for _, id := range runIDs {
			r := c.importRun(id)
			states = append(states, fmt.Sprintf("%s %d/%d", r.state, r.accepted, r.received))
			done = done && r.state == "completed"
		}
		return done, strings.Join(states, ", ")
	})
	t.Logf("imports completed %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	if got := accepted(); got != want {
		t.Errorf("%d customers accepted, want %d", got, want)
	}
	// In the promoted standby's log: one creation per customer, none twice.
	conn, err := pgx.Connect(context.Background(), standby.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var events, streams int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT stream_id) FROM events WHERE event_type = 'CustomerUpserted'`).Scan(&events, &streams); err != nil {
		t.Fatal(err)
	}
	if events != want || streams != want {
		t.Errorf("the log holds %d CustomerUpserted events of %d customers, want %d of %d", events, streams, want, want)
	}

	posts := poster.stop()
	c.mustJSON("POST", "/api/datatargets/"+dt+"/post/", `{"messages":[{"after":"failover"}]}`)
	total := int(c.mustJSON("GET", "/api/datatargets/"+dt+"/", "")["datatarget"].(map[string]any)["last_message_number"].(float64))
	c.waitFor("every message delivered", 5*time.Minute, func() (bool, string) {
		got := rcv.delivered()
		return got >= total, fmt.Sprintf("%d of %d messages", got, total)
	})
	rcv.check(t, c.queue(dt, total))
	for status := range posts {
		if status != 200 && status != http.StatusServiceUnavailable {
			t.Errorf("message posts answered %v; want 200s and, with no primary, 503s only", posts)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"status":500`) || strings.Contains(line, "panic") {
			t.Errorf("an internal error: %s", line)
		}
	}
	t.Logf("posts answered %v; %d messages, %d webhook requests; total %v", posts, total, rcv.requests(), time.Since(start).Round(time.Millisecond))
}
