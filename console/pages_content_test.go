package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/console"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/readmodels"
)

// The tests of this file check the details of what the pages show (a
// timeline's runs and actors, the overview's lag, a campaign's funnel,
// an import's warnings, failing outlets, the attempt log's pages) and
// that every form refuses other origins: each reads the page as a person
// would (texts, links, element ids), not its exact markup.

// TestTimelineRunActorTime: each entry of a customer's timeline
// shows when it was recorded, the run that imported it (a link to the
// run's page) and who acted, as people read it: a user's email for an
// upload of the user's, the token's name and its owner for one through
// the API with the token.
func TestTimelineRunActorTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	before1 := time.Now()
	run1 := e.mustImport(e.acme, importing.Customers, "external_id,first_name\nT-1,Tess\n")
	after1 := time.Now()
	id := e.waitCustomer(e.acme, "external_id", "T-1")

	_, value, err := e.cmds.CreateAccessToken.Handle(context.Background(), commands.CreateAccessToken{Principal: e.adminPrincipal(), Name: "importer"})
	if err != nil {
		t.Fatal(err)
	}
	before2 := time.Now()
	status, body := e.apiCall(value, http.MethodPost, "/api/customers/upload/", `{"customers": [{"external_id": "T-1", "last_name": "Turner"}]}`)
	if status != http.StatusOK {
		t.Fatalf("upload with the token: %d %s", status, body)
	}
	var up struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(body), &up); err != nil || up.RunID == "" {
		t.Fatalf("upload answer %s: %v", body, err)
	}
	if state := e.waitRun(up.RunID); state != "completed" {
		t.Fatalf("run %s: %s", up.RunID, state)
	}
	after2 := time.Now()
	run2 := up.RunID

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	_, page := c.do(http.MethodGet, "/console/customers/"+id, nil, nil)
	entries := timelineEntries(t, page)
	var upserts []string
	for _, en := range entries {
		if strings.Contains(stripTags(en), "CustomerUpserted") {
			upserts = append(upserts, en)
		}
	}
	if len(upserts) != 2 {
		t.Fatalf("the timeline shows %d upserts, want the 2 runs':\n%s", len(upserts), page)
	}
	// Newest first: the token's run, then the user's.
	upserts[0], upserts[1] = upserts[1], upserts[0]
	for i, want := range []struct {
		run, actor    string
		before, after time.Time
	}{
		{run1, e.admin.Email, before1, after1},
		{run2, e.admin.Email + ", with the token “importer”", before2, after2},
	} {
		en := upserts[i]
		if !strings.Contains(en, `href="/console/imports/`+want.run+`"`) {
			t.Errorf("entry %d does not link its run %s:\n%s", i+1, want.run, en)
		}
		text := stripTags(en)
		if !strings.Contains(text, want.actor) {
			t.Errorf("entry %d does not name its actor %s: %q", i+1, want.actor, text)
		}
		at, ok := timeOf(en)
		if !ok {
			t.Errorf("entry %d shows no time: %q", i+1, text)
			continue
		}
		if at.Before(want.before.Truncate(time.Millisecond)) || at.After(want.after) {
			t.Errorf("entry %d shows %s, want a time between %s and %s (its import)", i+1, at, want.before.UTC(), want.after.UTC())
		}
	}
}

// timelineEntries are the entries (<li>) of the page's #timeline.
func timelineEntries(t *testing.T, page string) []string {
	t.Helper()
	i := strings.Index(page, `id="timeline"`)
	if i < 0 {
		t.Fatalf("the page has no timeline:\n%s", page)
	}
	list := page[i:]
	if j := strings.Index(list, "</ol>"); j >= 0 {
		list = list[:j]
	}
	parts := strings.Split(list, "<li")[1:]
	for i := range parts {
		parts[i] = "<li" + parts[i]
	}
	return parts
}

var (
	timeElement = regexp.MustCompile(`(?s)<time(?:\s+datetime="([^"]*)")?[^>]*>(.*?)</time>`)
	htmlTag     = regexp.MustCompile(`(?s)<[^>]*>`)
	spaceRun    = regexp.MustCompile(`\s+`)
)

// timeOf reads the time an entry shows, in the layouts a page may use.
func timeOf(entry string) (time.Time, bool) {
	m := timeElement.FindStringSubmatch(entry)
	if m == nil {
		return time.Time{}, false
	}
	for _, s := range []string{m[1], strings.TrimSpace(html.UnescapeString(m[2]))} {
		for _, layout := range []string{"2006-01-02 15:04:05.000 UTC", "2006-01-02 15:04:05 UTC", time.RFC3339Nano} {
			if at, err := time.Parse(layout, s); err == nil {
				return at, true
			}
		}
	}
	return time.Time{}, false
}

// stripTags is the text of an HTML fragment, its spaces collapsed.
func stripTags(s string) string {
	return strings.TrimSpace(spaceRun.ReplaceAllString(html.UnescapeString(htmlTag.ReplaceAllString(s, " ")), " "))
}

// tableRow is a row of a table as text: its class and its cells.
type tableRow struct {
	Class string
	Cells []string
	// Header is whether every cell is a header cell (<th>).
	Header bool
}

var (
	rowStart  = regexp.MustCompile(`<tr(?:\s+class="([^"]*)")?[^>]*>`)
	tableCell = regexp.MustCompile(`(?s)<t([dh])[^>]*>(.*?)</t[dh]>`)
)

// rowsAfter reads the rows of the first table at or after the element
// with the id.
func rowsAfter(t *testing.T, page, id string) []tableRow {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("the page has no #%s:\n%s", id, page)
	}
	table := page[i:]
	if j := strings.Index(table, "</table>"); j >= 0 {
		table = table[:j]
	}
	var out []tableRow
	starts := rowStart.FindAllStringSubmatchIndex(table, -1)
	for k, s := range starts {
		end := len(table)
		if k+1 < len(starts) {
			end = starts[k+1][0]
		}
		r := tableRow{Header: true}
		if s[2] >= 0 {
			r.Class = table[s[2]:s[3]]
		}
		for _, c := range tableCell.FindAllStringSubmatch(table[s[1]:end], -1) {
			r.Cells = append(r.Cells, stripTags(c[2]))
			r.Header = r.Header && c[1] == "h"
		}
		out = append(out, r)
	}
	return out
}

// rowOf is the row whose first cell is name.
func rowOf(rows []tableRow, name string) (tableRow, bool) {
	for _, r := range rows {
		if len(r.Cells) > 0 && r.Cells[0] == name {
			return r, true
		}
	}
	return tableRow{}, false
}

// TestCrossOriginEveryForm: every state-changing route of the
// console, as its router lists them, refuses a request that the browser
// says comes from another origin (Sec-Fetch-Site, or Origin against the
// host; net/http.CrossOriginProtection) with 403, before it acts, though
// the user is logged in. The same request from the console's origin gets
// past the check (a logged-out client: it acts on nothing).
func TestCrossOriginEveryForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nX-1,xia@example.com\n")
	customerID := e.waitCustomer(e.acme, "external_id", "X-1")
	tok, tokValue, err := e.cmds.CreateAccessToken.Handle(context.Background(), commands.CreateAccessToken{Principal: e.adminPrincipal(), Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	srv, ok := e.srv.Config.Handler.(*api.Server)
	if !ok {
		t.Fatalf("the test server serves %T, not the API server", e.srv.Config.Handler)
	}
	// Each parameter of the routes, named as a real resource where there
	// is one: a refused request must leave it as it was.
	params := map[string]string{"id": customerID, "action": "forget", "token": tok.ID, "key": "0123456789abcdef"}
	param := regexp.MustCompile(`[:*]([A-Za-z_]+)`)
	var routes []api.Route
	for _, r := range srv.Routes() {
		if !strings.HasPrefix(r.Path, console.Prefix) {
			continue
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			continue
		}
		routes = append(routes, r)
	}
	// The enumeration itself: the forms the console is known to have.
	for _, want := range []string{"/console/login", "/console/logout", "/console/customers/:id/:action", "/console/uploads",
		"/console/access/tokens", "/console/access/tokens/:token/revoke", "/console/access/integrations", "/console/new-segment"} {
		if !slices.ContainsFunc(routes, func(r api.Route) bool { return r.Method == http.MethodPost && r.Path == want }) {
			t.Errorf("the router lists no POST %s: the enumeration misses routes", want)
		}
	}

	victim := e.client(acmeHost)
	victim.logIn(e.admin.Email, "")
	cases := map[string]map[string]string{
		"Sec-Fetch-Site cross-site":          {"Sec-Fetch-Site": "cross-site"},
		"Sec-Fetch-Site same-site":           {"Sec-Fetch-Site": "same-site"},
		"Origin of another site":             {"Origin": "http://evil.example"},
		"Origin of another company's host":   {"Origin": e.url(globexHost, "")},
		"Origin of another port":             {"Origin": "http://" + acmeHost + ":1"},
		"Origin null (a sandboxed document)": {"Origin": "null"},
	}
	for _, r := range routes {
		path := param.ReplaceAllStringFunc(r.Path, func(p string) string {
			if v, ok := params[p[1:]]; ok {
				return v
			}
			return "x"
		})
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			for name, h := range cases {
				res, body := victim.do(r.Method, path, url.Values{"name": {"csrf"}}, h)
				if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "another site") {
					t.Errorf("%s: %s %s answered %d, want 403 (sent from another site)", name, r.Method, path, res.StatusCode)
				}
			}
			res, body := e.client(acmeHost).do(r.Method, path, url.Values{}, sameOrigin)
			if res.StatusCode == http.StatusForbidden || strings.Contains(body, "another site") {
				t.Errorf("from the console's origin: %s %s answered %d, want it past the origin check", r.Method, path, res.StatusCode)
			}
		})
	}

	// Nothing the refused forms asked for happened.
	res, body := victim.do(http.MethodGet, "/console/customers/"+customerID, nil, nil)
	if res.StatusCode != http.StatusOK || strings.Contains(body, `id="forgotten"`) || !strings.Contains(body, "xia@example.com") {
		t.Errorf("after the refused forms the customer's page is %d, forgotten or without its email", res.StatusCode)
	}
	if status, _ := e.apiCall(tokValue, http.MethodGet, "/api/data/customers/", ""); status != http.StatusOK {
		t.Errorf("the token after a refused revocation: %d", status)
	}
	var runs, tokens, integrations int
	if err := e.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM import_runs WHERE source = 'console'),
		(SELECT count(*) FROM access_tokens WHERE name = 'csrf'), (SELECT count(*) FROM integrations WHERE name = 'csrf')`).Scan(&runs, &tokens, &integrations); err != nil {
		t.Fatal(err)
	}
	if runs+tokens+integrations != 0 {
		t.Errorf("refused forms staged %d runs, created %d tokens and %d integrations", runs, tokens, integrations)
	}
}

// idleProjector is an async projection that never runs: the overview of
// a server that reports it shows it behind by the whole log.
type idleProjector struct{}

func (idleProjector) Name() string     { return "idle" }
func (idleProjector) Tables() []string { return nil }
func (idleProjector) Apply(context.Context, pgx.Tx, []eventstore.RecordedEvent) error {
	return nil
}

// withProjections is a copy of the env whose client speaks to a second
// server on the same database, reporting the lag of async (the env's own
// server reports that of the projections it runs).
func (e *env) withProjections(async []projections.Projector) *env {
	return e.twin(func(a *app.Application) { a.Queries.ProjectionStatus = projectionStatus(e.pool, e.store, async) })
}

// twin is a copy of the env whose client speaks to a second server on
// the same database (API and console), its console's application as
// adjust leaves it.
func (e *env) twin(adjust func(*app.Application)) *env {
	e.t.Helper()
	acc := readmodels.NewAccess(e.pool)
	application := app.Application{
		Commands: app.Commands{
			Commands:      e.cmds,
			Authenticator: authn.New(e.pool, acc),
			Sessions:      authn.NewConsoleSessions(e.pool, acc, authn.DefaultSessionTTL),
		},
		Queries: app.Queries{
			Companies: readmodels.NewCompanies(e.pool, "localhost"), Access: acc,
			Datatargets: readmodels.NewDatatargets(e.pool, e.keys), Customers: readmodels.NewCustomers(e.pool),
			CustomerHistory: readmodels.NewCustomerHistory(e.store, e.pool, e.keys), Imports: readmodels.NewImports(e.pool),
		},
	}
	logger := slog.New(slog.DiscardHandler)
	s, err := api.NewServer(api.Config{BaseDomain: "localhost", Logger: logger}, application)
	if err != nil {
		e.t.Fatal(err)
	}
	adjust(&application)
	if _, err := console.Mount(s, console.Config{Logger: logger}, application); err != nil {
		e.t.Fatal(err)
	}
	twin := *e
	twin.srv = httptest.NewServer(s)
	e.t.Cleanup(twin.srv.Close)
	return &twin
}

// TestOverviewLagAndRejected: the operations page shows each
// projection's lag as the number of events of the log it has not applied
// (a projection that never ran: every event), and the overview the
// day's rejected records as the red part of today's bar and in the
// totals.
func TestOverviewLagAndRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.mustImport(e.acme, importing.Customers, "external_id,email\nL-1,lea@example.com\n")
	// Two runs with rejections: 2 accepted and 4 rejected records today.
	for _, csv := range []string{
		"external_id,email\nL-2,lia@example.com\nL-3,not an email\n",
		"external_id,email\nL-4,not an email\nL-5,neither\nL-6,nor this\n",
	} {
		up, err := e.uploads.Handle(ctx, imports.StageUpload{Principal: e.adminPrincipal(), Entity: importing.Customers,
			Format: ingest.CSV, Body: strings.NewReader(csv)})
		if err != nil {
			t.Fatal(err)
		}
		if state := e.waitRun(up.RunID); state != "completed" {
			t.Fatalf("run %s: %s", up.RunID, state)
		}
	}
	e.waitCustomer(e.acme, "external_id", "L-2")

	twin := e.withProjections(append(asyncProjectors(e.keys), idleProjector{}))
	c := twin.client(acmeHost)
	c.logIn(e.staff.Email, "")
	// The log is quiet now; its events are counted around the page's
	// read, until nothing was appended in between.
	var page string
	var events int64
	for try := 0; ; try++ {
		var n1, n2 int64
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n1); err != nil {
			t.Fatal(err)
		}
		_, page = c.do(http.MethodGet, "/console/operations", nil, nil)
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n2); err != nil {
			t.Fatal(err)
		}
		if n1 == n2 {
			events = n1
			break
		}
		if try == 20 {
			t.Fatalf("the log keeps growing: %d then %d events", n1, n2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if events == 0 {
		t.Fatal("the log is empty")
	}
	lag := rowsAfter(t, page, "lag")
	idle, ok := rowOf(lag, "idle")
	if !ok {
		t.Fatalf("the lag lists no idle: %+v", lag)
	}
	if len(idle.Cells) < 2 || firstNumber(idle.Cells[1]) != strconv.FormatInt(events, 10) || strings.Contains(idle.Cells[1], "caught up") {
		t.Errorf("the idle projection's lag reads %q, want %d events behind", idle.Cells, events)
	}
	if idle.Class == "ok" {
		t.Errorf("the idle projection's row is marked ok")
	}

	// The projections the env runs catch up: 0, caught up.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, page = c.do(http.MethodGet, "/console/operations", nil, nil)
		r, ok := rowOf(rowsAfter(t, page, "lag"), "customers")
		if ok && len(r.Cells) > 1 && firstNumber(r.Cells[1]) == "0" && strings.Contains(r.Cells[1], "caught up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the customers projection never shows 0, caught up: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}

	_, page = c.do(http.MethodGet, "/console/", nil, nil)
	if !strings.Contains(page, `id="rejected-total">4<`) || !strings.Contains(page, `id="accepted-total">2<`) {
		t.Errorf("the totals are not 2 accepted, 4 rejected:\n%s", page)
	}
	today := time.Now().In(e.acme.Location()).Format("Jan 2")
	_, titles := chartTitles(t, page, "imports-chart")
	if !slices.Contains(titles["chart-bad"], today+": 4 rejected") {
		t.Errorf("no bar of today's 4 rejected records in the chart: %q", titles)
	}
	if !slices.Contains(titles["chart-ok"], today+": 2 accepted") {
		t.Errorf("no bar of today's 2 accepted records in the chart: %q", titles)
	}
}

var leadingNumber = regexp.MustCompile(`^[0-9][0-9,]*`)

// firstNumber is the leading number of a text ("12 · caught up": "12").
func firstNumber(s string) string { return leadingNumber.FindString(strings.TrimSpace(s)) }

var chartRect = regexp.MustCompile(`(?s)<rect\s+class="([^"]*)"[^>]*>\s*<title>(.*?)</title>`)

// chartTitles are the titles of a chart's bars (segments), in the order
// drawn, and by class.
func chartTitles(t *testing.T, page, id string) (all []string, byClass map[string][]string) {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("the page has no chart #%s", id)
	}
	fig := page[i:]
	if j := strings.Index(fig, "</figure>"); j >= 0 {
		fig = fig[:j]
	}
	byClass = map[string][]string{}
	for _, m := range chartRect.FindAllStringSubmatch(fig, -1) {
		title := html.UnescapeString(m[2])
		all = append(all, title)
		byClass[m[1]] = append(byClass[m[1]], title)
	}
	return all, byClass
}

// TestCampaignFunnel: a campaign's page shows the four steps of
// its funnel with their counts of events (docs/campaigns.md: events, not
// customers): sent 5, delivered 4, opens 3 (one customer opened twice),
// clicks 2 (a mail click and an SMS click); a BROWSE of the campaign
// counts in none.
func TestCampaignFunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := e.apiToken()
	e.mustImport(e.acme, importing.Customers, "external_id\nA\nB\nC\nD\nE\n")
	if status, body := e.apiCall(token, http.MethodPost, "/api/campaigns/", `{"campaign_key": "funnel", "kind": "email",
		"name": "Funnel", "state": "active", "activated_at": "2025-01-01T00:00:00Z"}`); status != http.StatusOK {
		t.Fatalf("create campaign: %d %s", status, body)
	}
	var csv strings.Builder
	csv.WriteString("type,date,customer_id,campaign_key,path\n")
	add := func(typ, day string, customers ...string) {
		for _, c := range customers {
			path := ""
			if typ == "BROWSE" {
				path = "/spring"
			}
			csv.WriteString(typ + ",2025-01-" + day + "T10:00:00Z," + c + ",funnel," + path + "\n")
		}
	}
	add("MAIL_SENT", "02", "A", "B", "C", "D", "E")
	add("MAIL_DELIVERED", "02", "A", "B", "C", "D")
	add("MAIL_OPEN", "03", "A", "A", "B")
	add("MAIL_CLICK", "04", "A")
	add("SMS_CLICK", "04", "B")
	add("BROWSE", "04", "C")
	e.mustImport(e.acme, importing.Events, csv.String())

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	want := []struct {
		step  string
		count string
	}{{"sent", "5"}, {"delivered", "4"}, {"opens", "3"}, {"clicks", "2"}}
	var page string
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, page = c.do(http.MethodGet, "/console/campaigns/funnel", nil, nil)
		if r, ok := rowOf(campaignFigures(t, page), "clicks"); ok && len(r.Cells) > 1 && r.Cells[1] == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the campaign page never counted the clicks:\n%s", page)
		}
		time.Sleep(50 * time.Millisecond)
	}
	figures := campaignFigures(t, page)
	titles, _ := chartTitles(t, page, "funnel")
	last := -1
	for _, w := range want {
		if r, ok := rowOf(figures, w.step); !ok || len(r.Cells) < 2 || r.Cells[1] != w.count {
			t.Errorf("the campaign's %s reads %q, want %s", w.step, r.Cells, w.count)
		}
		// The funnel's bar of the step, in the funnel's order.
		at := slices.IndexFunc(titles, func(s string) bool { return strings.HasPrefix(s, w.step+": "+w.count+" ") })
		if at < 0 {
			t.Errorf("the funnel has no bar %s: %s: %q", w.step, w.count, titles)
		} else if at < last {
			t.Errorf("the funnel's bar %s comes before the step it follows: %q", w.step, titles)
		}
		last = max(last, at)
	}
}

// campaignFigures are the rows of the campaign page's event counts (the
// table beside the funnel).
func campaignFigures(t *testing.T, page string) []tableRow {
	t.Helper()
	i := strings.Index(page, `id="funnel"`)
	if i < 0 {
		return nil
	}
	return rowsAfter(t, page[i:], "events")
}

// TestImportWarnings: a run whose records carry fields the
// entity does not have lists each field once under its warnings, with how
// many imported records carried it and the index of the first; a
// rejected record counts for nothing (docs/customers.md).
func TestImportWarnings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up, err := e.uploads.Handle(context.Background(), imports.StageUpload{Principal: e.adminPrincipal(), Entity: importing.Customers,
		Format: ingest.JSON, Body: strings.NewReader(`{"customers": [
			{"external_id": "W-1", "email": "w1@example.com", "shoe_size": 42},
			{"external_id": "W-2", "email": "not an email", "shoe_size": 43, "store_id": "1"},
			{"external_id": "W-3", "email": "w3@example.com", "shoe_size": 44},
			{"external_id": "W-4", "shoe_size": 45, "store_id": "3"}
		]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if state := e.waitRun(up.RunID); state != "completed" {
		t.Fatalf("run %s: %s", up.RunID, state)
	}
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	res, page := c.do(http.MethodGet, "/console/imports/"+up.RunID, nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the run's page: %d", res.StatusCode)
	}
	rows := rowsAfter(t, page, "warnings")
	for _, w := range []struct{ field, count, first string }{
		{"shoe_size", "3", "0"},
		{"store_id", "1", "3"},
	} {
		r, ok := rowOf(rows, w.field)
		if !ok {
			t.Errorf("the warnings list no %s: %+v", w.field, rows)
			continue
		}
		if len(r.Cells) < 3 || r.Cells[1] != w.count || r.Cells[2] != w.first {
			t.Errorf("the warning of %s reads %q, want %s records from record %s", w.field, r.Cells, w.count, w.first)
		}
	}
	if _, ok := rowOf(rows, "email"); ok {
		t.Errorf("a field of the entity is listed as ignored: %+v", rows)
	}
}

// webhookOutlet creates a messages datatarget of acme with n messages and
// an unbatched webhook outlet to a receiver answering status to every
// request (deliver runs the delivery worker).
func (e *env) webhookOutlet(name string, n, status int) (datatargetID, outletID string) {
	e.t.Helper()
	ctx := context.Background()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
	}))
	e.t.Cleanup(receiver.Close)
	p := e.adminPrincipal()
	d, err := e.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	var msgs []json.RawMessage
	for i := range n {
		msgs = append(msgs, json.RawMessage(`{"n": `+itoa(i+1)+`}`))
	}
	if n > 0 {
		if _, err := e.cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: msgs}); err != nil {
			e.t.Fatal(err)
		}
	}
	o, err := e.cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: d.ID, Spec: datatarget.OutletSpec{
		Type: "webhook", Request: datatarget.Request{URL: receiver.URL + "/hook", Method: "POST"},
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	return d.ID, o.ID
}

// deliver runs the delivery worker as serve does, until the test ends.
func (e *env) deliver() {
	e.t.Helper()
	dl, err := delivery.New(delivery.Config{
		Pool: e.pool, Keys: e.keys, Disable: e.cmds.DisableOutlet.BySystem, PollInterval: 20 * time.Millisecond,
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, MinBackoff: time.Hour, MaxBackoff: time.Hour,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	dctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dl.Run(dctx) }()
	e.t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && dctx.Err() == nil {
			e.t.Errorf("delivery: %v", err)
		}
	})
}

// waitFor waits until query, of the test's database, answers true.
func (e *env) waitFor(what, query string, args ...any) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		if err := e.pool.QueryRow(context.Background(), query, args...).Scan(&ok); err != nil {
			e.t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not after 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDisabledOutletFailing: the overview's "failing now" lists
// every disabled outlet (readmodels.OutletState.Failing), as disabled,
// with the reason and no next attempt: one a user disabled before it ever
// failed, and one the service disabled when its receiver answered 410
// Gone. An outlet that delivers is not listed.
func TestDisabledOutletFailing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pausedDT, paused := e.webhookOutlet("Paused shop", 1, http.StatusOK)
	if err := e.cmds.DisableOutlet.Handle(context.Background(), commands.DisableOutlet{Principal: e.adminPrincipal(),
		DatatargetID: pausedDT, OutletID: paused, Reason: "paused for the migration"}); err != nil {
		t.Fatal(err)
	}
	goneDT, gone := e.webhookOutlet("Gone shop", 1, http.StatusGone)
	_, fine := e.webhookOutlet("Fine shop", 1, http.StatusOK)
	e.deliver()
	e.waitFor("the outlet disabled", `SELECT NOT enabled FROM datatarget_outlets WHERE id = $1`, gone)
	e.waitFor("the message delivered", `SELECT count(*) = 1 FROM outlet_log WHERE outlet_id = $1 AND status = 'OK'`, fine)

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	_, page := c.do(http.MethodGet, "/console/", nil, nil)
	var listed []tableRow
	for _, r := range rowsAfter(t, page, "failing") {
		if !r.Header && len(r.Cells) > 1 {
			listed = append(listed, r)
		}
	}
	if len(listed) != 2 {
		t.Fatalf("the overview lists %d failing outlets, want the 2 disabled ones: %+v", len(listed), listed)
	}
	for i, want := range []struct{ datatarget, reason, link string }{
		{"Paused shop", "paused for the migration", `href="/console/datatargets/` + pausedDT + `/outlets/` + paused + `"`},
		{"Gone shop", "410 Gone", `href="/console/datatargets/` + goneDT + `/outlets/` + gone + `"`},
	} {
		r := listed[i]
		text := strings.Join(r.Cells, " | ")
		if r.Cells[0] != want.datatarget || !strings.Contains(text, "disabled") || !strings.Contains(text, want.reason) {
			t.Errorf("row %d reads %q, want %s, disabled, %s", i+1, text, want.datatarget, want.reason)
		}
		if len(r.Cells) >= 5 && r.Cells[4] != "–" {
			t.Errorf("the disabled outlet of %s shows a next attempt %q", want.datatarget, r.Cells[4])
		}
		if !strings.Contains(page, want.link) {
			t.Errorf("the row of %s does not link the outlet's page", want.datatarget)
		}
	}
	var attempts int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM outlet_log WHERE outlet_id = $1`, paused).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 0 {
		t.Fatalf("the paused outlet was attempted %d times: it must be listed for being disabled alone", attempts)
	}
	if strings.Contains(page, "/outlets/"+fine) {
		t.Errorf("the delivering outlet is listed as failing")
	}
}

// TestAttemptLogPaging: an outlet's page lists its attempts
// newest first, 50 a page, and links the older ones, which the next page
// lists to the first.
func TestAttemptLogPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dt, outlet := e.webhookOutlet("Busy shop", 60, http.StatusOK)
	e.deliver()
	e.waitFor("60 attempts", `SELECT count(*) = 60 FROM outlet_log WHERE outlet_id = $1`, outlet)

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	entry := regexp.MustCompile(`href="/console/datatargets/` + dt + `/outlets/` + outlet + `/log/([0-9]+)"`)
	entries := func(page string) []int {
		i := strings.Index(page, `id="attempts"`)
		if i < 0 {
			t.Fatalf("the outlet page has no attempt log:\n%s", page)
		}
		var out []int
		for _, m := range entry.FindAllStringSubmatch(page[i:], -1) {
			n, _ := strconv.Atoi(m[1])
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	}
	older := regexp.MustCompile(`<a[^>]*href="([^"]*[?&]from=[^"]*)"`)
	_, page := c.do(http.MethodGet, "/console/datatargets/"+dt+"/outlets/"+outlet, nil, nil)
	if !strings.Contains(stripTags(page), "60") {
		t.Errorf("the page does not say the log holds 60 attempts")
	}
	if got := entries(page); !slices.Equal(got, countdown(60, 11)) {
		t.Fatalf("the first page lists attempts %v, want 60 down to 11", got)
	}
	m := older.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the first page links no older attempts:\n%s", page)
	}
	_, page = c.do(http.MethodGet, html.UnescapeString(m[1]), nil, nil)
	if got := entries(page); !slices.Equal(got, countdown(10, 1)) {
		t.Fatalf("the older page lists attempts %v, want 10 down to 1", got)
	}
	if older.MatchString(page) {
		t.Errorf("the page of the first attempts links older ones")
	}
}

// countdown is from, from-1, ..., to.
func countdown(from, to int) []int {
	var out []int
	for n := from; n >= to; n-- {
		out = append(out, n)
	}
	return out
}
