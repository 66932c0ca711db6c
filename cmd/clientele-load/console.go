package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The console benchmark (-console): the console's pages loaded through
// real HTTP, with a session cookie as a browser has, once the company
// holds o.n customers (and a datatarget with messages, a campaign).
// Each page is loaded consoleLoads times, one after another; the figures
// are the server's answer times seen by the client (to the last byte),
// p50 and p95 of them. The pages must answer within 200 ms (issue 17).
//
//	go run ./cmd/clientele-load -console -n 1000000

// consoleLoads is how often each page is loaded.
const consoleLoads = 20

type consolePage struct {
	name, path string
	p50, p95   time.Duration
	max        time.Duration
	bytes      int
}

type consoleResult struct {
	customers int
	load      time.Duration
	pages     []consolePage
}

func (r consoleResult) print(w io.Writer) {
	fmt.Fprintf(w, "console pages with %d customers in the company (imported in %.1fs), %d loads each:\n", r.customers, r.load.Seconds(), consoleLoads)
	fmt.Fprintf(w, "%-22s %9s %9s %9s %9s  %s\n", "page", "p50", "p95", "max", "KB", "path")
	for _, p := range r.pages {
		fmt.Fprintf(w, "%-22s %7.1fms %7.1fms %7.1fms %9.1f  %s\n", p.name, ms(p.p50), ms(p.p95), ms(p.max), float64(p.bytes)/1000, p.path)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func runConsole(ctx context.Context, o options) (consoleResult, error) {
	res := consoleResult{customers: o.n}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return res, err
	}
	d, err := deploy(ctx, o, "console")
	if err != nil {
		return res, err
	}
	defer d.close()
	dbURL, srv, token := d.url, d.srv, d.token

	start := time.Now()
	if err := importUntimed(ctx, srv.base, token, "customers", o.n, o.perUpload); err != nil {
		return res, err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	for {
		n, err := countRetrievable(ctx, conn, "customers")
		if err != nil {
			return res, err
		}
		if n >= o.n {
			break
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	res.load = time.Since(start)

	// A datatarget with messages and a campaign, so that their pages
	// show something.
	var dt struct {
		Datatarget struct {
			ID string `json:"id"`
		} `json:"datatarget"`
	}
	if err := do("POST", srv.base+"/api/datatargets/", token, strings.NewReader(`{"datatarget_type": "messages", "name": "orders"}`), "application/json", &dt); err != nil {
		return res, err
	}
	var msgs strings.Builder
	msgs.WriteString(`{"messages": [`)
	for i := range 200 {
		if i > 0 {
			msgs.WriteByte(',')
		}
		fmt.Fprintf(&msgs, `{"order": %d, "total": %d}`, i, i*100)
	}
	msgs.WriteString(`]}`)
	var posted map[string]any
	if err := do("POST", srv.base+"/api/datatargets/"+dt.Datatarget.ID+"/post/", token, strings.NewReader(msgs.String()), "application/json", &posted); err != nil {
		return res, err
	}
	var camp map[string]any
	if err := do("POST", srv.base+"/api/campaigns/", token, strings.NewReader(`{"campaign_key": "spring", "kind": "email", "name": "Spring", "state": "active"}`),
		"application/json", &camp); err != nil {
		return res, err
	}
	var customerID, runID string
	if err := conn.QueryRow(ctx, `SELECT customer_id FROM customers WHERE doc->>'external_id' = $1`, fmt.Sprintf("c-%d", o.n/2)).Scan(&customerID); err != nil {
		return res, fmt.Errorf("a customer to open: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT id FROM import_runs ORDER BY id DESC LIMIT 1`).Scan(&runID); err != nil {
		return res, err
	}

	client, err := consoleLogIn(srv.base)
	if err != nil {
		return res, err
	}
	pages := []consolePage{
		{name: "overview", path: "/console/"},
		{name: "customers", path: "/console/customers"},
		{name: "customers, a filter", path: fmt.Sprintf("/console/customers?f=email&v=customer%d@example.com", o.n/3)},
		{name: "customers, page 2", path: ""},
		{name: "customer", path: "/console/customers/" + customerID},
		{name: "imports", path: "/console/imports"},
		{name: "import run", path: "/console/imports/" + runID},
		{name: "datatargets", path: "/console/datatargets"},
		{name: "datatarget", path: "/console/datatargets/" + dt.Datatarget.ID},
		{name: "campaigns", path: "/console/campaigns"},
		{name: "campaign", path: "/console/campaigns/spring"},
		{name: "access", path: "/console/access"},
	}
	next := regexp.MustCompile(`href="([^"]+)" id="next"`)
	for i := range pages {
		p := &pages[i]
		if p.path == "" {
			// The second page of the list, from the first's next link.
			body, _, err := consoleGet(client, srv.base, "/console/customers")
			if err != nil {
				return res, err
			}
			m := next.FindStringSubmatch(body)
			if m == nil {
				return res, fmt.Errorf("the customer list links no next page")
			}
			p.path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		var times []time.Duration
		for range consoleLoads {
			body, took, err := consoleGet(client, srv.base, p.path)
			if err != nil {
				return res, err
			}
			p.bytes = len(body)
			times = append(times, took)
		}
		slices.Sort(times)
		p.p50, p.p95, p.max = times[len(times)/2], times[len(times)*95/100], times[len(times)-1]
		fmt.Fprintf(os.Stderr, "%s: p50 %.1fms\n", p.name, ms(p.p50))
	}
	res.pages = pages
	return res, nil
}

// consoleLogIn logs in to the console as the load company's admin, as
// the log-in form does, and returns a client holding the session cookie.
func consoleLogIn(base string) (*http.Client, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"email": {email}, "password": {password}}
	req, err := http.NewRequest("POST", base+"/console/login", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("console log-in: %d", resp.StatusCode)
	}
	// The cookie was set for the request's URL (127.0.0.1); the company
	// is named by the Host header, as a proxy would.
	return c, nil
}

// consoleGet loads a page and times it to its last byte.
func consoleGet(c *http.Client, base, path string) (string, time.Duration, error) {
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		return "", 0, err
	}
	req.Host = host
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("GET %s: %d %.300s", path, resp.StatusCode, b)
	}
	return string(b), took, nil
}
