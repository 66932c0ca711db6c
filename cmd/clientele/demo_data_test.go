package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nyaruka/phonenumbers"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestDemoSetGenerated checks the generated set without a database: it is
// the same whenever it is generated but for its dates, its phone numbers
// are valid for the phone library, its emails unique, and its campaign
// has figures of every kind to show.
func TestDemoSetGenerated(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, b := newDemoSet(now), newDemoSet(now.Add(50*time.Hour+37*time.Second))
	if diff := cmp.Diff(a.Figures, b.Figures); diff != "" {
		t.Errorf("figures differ with the time (-a +b):\n%s", diff)
	}
	undated := func(s demoSet) [][]map[string]any {
		var out [][]map[string]any
		for _, records := range [][]map[string]any{s.Customers, s.Products, s.Events, s.Sales} {
			var list []map[string]any
			for _, r := range records {
				r = maps.Clone(r)
				delete(r, "date")
				delete(r, "sale_date")
				delete(r, "date_joined")
				list = append(list, r)
			}
			out = append(out, list)
		}
		return out
	}
	if diff := cmp.Diff(undated(a), undated(b)); diff != "" {
		t.Errorf("records differ with the time, dates aside (-a +b):\n%s", diff)
	}
	if len(a.Customers) != demoCustomers || len(a.Products) != len(demoProducts) {
		t.Errorf("%d customers, %d products", len(a.Customers), len(a.Products))
	}
	emails := map[any]bool{}
	for _, c := range a.Customers {
		if emails[c["email"]] {
			t.Errorf("email %v twice", c["email"])
		}
		emails[c["email"]] = true
		if ph, ok := c["phone_number"].(string); ok {
			n, err := phonenumbers.Parse(ph, "")
			if err != nil || !phonenumbers.IsValidNumber(n) {
				t.Errorf("phone %s is not valid: %v", ph, err)
			}
		}
	}
	for _, e := range a.Events {
		if d, _ := time.Parse(time.RFC3339, e["date"].(string)); d.After(now) {
			t.Errorf("event in the future: %v", e)
		}
	}
	f := a.Figures
	for name, n := range map[string]int{"audience": f.AudienceSize, "opens": f.Opens, "clicks": f.Clicks, "bounces": f.Bounces,
		"unsubscribes": f.Unsubscribes, "conversions": f.Conversions} {
		if n == 0 {
			t.Errorf("the campaign has no %s: %+v", name, f)
		}
	}
}

// TestServeDemoData starts serve with --demo --demo-data through the real
// binary's entry point: the API then answers the generated counts
// (retrieval, import runs, the campaign's statistics), and a second start
// on the same data loads nothing more.
func TestServeDemoData(t *testing.T) {
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn"})
	dataDir := t.TempDir()
	began := time.Now()
	base, out, stop := startServe(t, getenv, "--data-dir", dataDir, "--demo", "--demo-data")
	defer stop()
	login := regexp.MustCompile(`Log in as (\S+) with password (\S+)`).FindStringSubmatch(out.String())
	if login == nil {
		t.Fatalf("no login printed:\n%s", out.String())
	}
	code, body := request(t, "POST", base+"/api/access-tokens/", "demo.localhost", nil, func(r *http.Request) {
		r.SetBasicAuth(login[1], login[2])
	})
	if code != 200 {
		t.Fatalf("token: %d %v", code, body)
	}
	token := body["access_token"].(map[string]any)["token"].(string)
	get := func(path string) map[string]any {
		t.Helper()
		code, body := request(t, "GET", base+path, "demo.localhost", nil, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
		})
		if code != 200 {
			t.Fatalf("GET %s: %d %v", path, code, body)
		}
		return body
	}
	want := newDemoSet(time.Now())
	f := want.Figures

	// The four uploads, imported whole.
	waitFor(t, 60*time.Second, "the demo uploads to be imported", func() string {
		runs, _ := get("/api/imports/")["imports"].([]any)
		var got []string
		for _, r := range runs {
			r := r.(map[string]any)
			got = append(got, fmt.Sprintf("%s %s %v/%v/%v", r["entity"], r["state"], r["received"], r["accepted"], r["rejected"]))
		}
		return strings.Join(got, "; ")
	}, strings.Join([]string{
		fmt.Sprintf("sales completed %d/%d/0", len(want.Sales), len(want.Sales)),
		fmt.Sprintf("events completed %d/%d/0", len(want.Events), len(want.Events)),
		fmt.Sprintf("products completed %d/%d/0", len(want.Products), len(want.Products)),
		fmt.Sprintf("customers completed %d/%d/0", len(want.Customers), len(want.Customers)),
	}, "; "))
	loaded := time.Since(began)

	// Retrieval answers every record (the read models follow the log).
	for _, c := range []struct {
		entity string
		n      int
	}{{"customers", len(want.Customers)}, {"products", len(want.Products)}, {"events", len(want.Events)}, {"sales", len(want.Sales)}} {
		waitFor(t, 30*time.Second, c.entity+" retrieved", func() string {
			docs, _ := get("/api/data/" + c.entity + "/?limit=10000")[c.entity].([]any)
			return fmt.Sprint(len(docs))
		}, fmt.Sprint(c.n))
	}

	// The campaign's statistics are the figures worked out from the records.
	wantStats := fmt.Sprintf("audience %d, with events %d, unreachable %d; events %d %d %d %d %d %d %d; conversions %d, revenue %d",
		f.AudienceSize, f.AudienceWithEvents, f.AudienceUnreachable,
		f.Sent, f.Delivered, f.Opens, f.Clicks, f.Unsubscribes, f.SpamReports, f.Bounces, f.Conversions, f.Revenue)
	waitFor(t, 30*time.Second, "the campaign's statistics", func() string {
		list, _ := get("/api/campaign/actions/?keys=" + want.Campaign.Key)["campaigns"].([]any)
		if len(list) != 1 {
			return fmt.Sprintf("%d campaigns", len(list))
		}
		s, _ := list[0].(map[string]any)["stats"].(map[string]any)
		if s == nil {
			return "no stats"
		}
		var counts []string
		for _, e := range s["events"].([]any) {
			counts = append(counts, fmt.Sprint(e.(map[string]any)["count"]))
		}
		sales := s["sales"].(map[string]any)
		return fmt.Sprintf("audience %v, with events %v, unreachable %v; events %s; conversions %v, revenue %v",
			s["audience_size"], s["audience_with_events"], s["audience_unreachable"], strings.Join(counts, " "),
			s["sales_for_conversion"], int64(sales["total_revenue"].(float64)))
	}, wantStats)
	t.Logf("demo data loaded and projected %.1fs after serve was started: %d customers, %d products, %d events, %d sales; %d conversions",
		loaded.Seconds(), len(want.Customers), len(want.Products), len(want.Events), len(want.Sales), f.Conversions)

	// The datatargets: the datasync one has every customer, the other its messages.
	targets, _ := get("/api/datatargets/")["datatargets"].([]any)
	if len(targets) != 2 {
		t.Fatalf("datatargets: %v", targets)
	}
	stop()

	// A second start on the same company loads nothing.
	base, _, stop = startServe(t, getenv, "--data-dir", dataDir, "--demo", "--demo-data")
	defer stop()
	runs, _ := get("/api/imports/")["imports"].([]any)
	if len(runs) != 4 {
		t.Errorf("after a second start, %d import runs, want 4", len(runs))
	}
	if targets, _ := get("/api/datatargets/")["datatargets"].([]any); len(targets) != 2 {
		t.Errorf("after a second start, %d datatargets, want 2", len(targets))
	}
	if ints, _ := get("/api/integrations/")["integrations"].([]any); len(ints) != 1 {
		t.Errorf("after a second start, %d integrations, want 1", len(ints))
	}
	stop()
}

// waitFor polls got until it returns want, or fails the test after timeout
// with the last answer.
func waitFor(t *testing.T, timeout time.Duration, what string, got func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		last := got()
		if last == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s:\n got %s\nwant %s", what, last, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeDemoDataLeavesACompanyWithData starts serve with --demo-data on
// a demo company that has a customer already: nothing is loaded. Without
// --demo, --demo-data is refused.
func TestServeDemoDataLeavesACompanyWithData(t *testing.T) {
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn"})
	dataDir := t.TempDir()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--demo-data"}, &out, &errOut, getenv)
	if err == nil || !strings.Contains(err.Error(), "--demo") {
		t.Fatalf("--demo-data without --demo: %v", err)
	}

	mustRun(t, getenv, "company", "create", demoSlug, "--data-dir", dataDir)
	file := filepath.Join(dataDir, "customers.json")
	if err := os.WriteFile(file, []byte(`[{"external_id": "own-1", "first_name": "Oma"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, getenv, "import", "--company", demoSlug, "--entity", "customers", "--data-dir", dataDir, file)

	base, printed, stop := startServe(t, getenv, "--data-dir", dataDir, "--demo", "--demo-data")
	defer stop()
	login := regexp.MustCompile(`Log in as (\S+) with password (\S+)`).FindStringSubmatch(printed.String())
	if login == nil {
		t.Fatalf("no login printed:\n%s", printed.String())
	}
	auth := func(r *http.Request) { r.SetBasicAuth(login[1], login[2]) }
	code, body := request(t, "POST", base+"/api/access-tokens/", "demo.localhost", nil, auth)
	if code != 200 {
		t.Fatalf("token: %d %v", code, body)
	}
	bearer := func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+body["access_token"].(map[string]any)["token"].(string))
	}
	for path, key := range map[string]string{"/api/imports/": "imports", "/api/campaigns/": "campaigns", "/api/datatargets/": "datatargets"} {
		code, got := request(t, "GET", base+path, "demo.localhost", nil, bearer)
		list, _ := got[key].([]any)
		want := 0
		if key == "imports" {
			want = 1
		}
		if code != 200 || len(list) != want {
			t.Errorf("GET %s: %d, %d %s, want %d", path, code, len(list), key, want)
		}
	}
	stop()
}
