package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/readmodels"
)

// pageSize is the length of the console's lists.
const pageSize = 50

// maxFilters bounds the filters of one search, as the API bounds them.
const maxFilters = 50

// searchScanBound bounds the customers one page of a search reads
// (readmodels.PageQuery.MaxScan): a filter that few customers meet would
// otherwise read the whole company for one page (2.2 s at 1,000,000).
// 50,000 customers cost 50 to 90 ms (docs/benchmarks.md, "Console
// pages"); the page then offers to search on from there.
const searchScanBound = 50_000

// filterRow is one "field = value" of a search.
type filterRow struct{ Field, Value string }

// customersView is the customers page.
type customersView struct {
	// Query and Sort are the search typed and its order; Sorts are the
	// orders offered. Found says how many customers it found ("12", "at
	// least 1,000"); Prev and Next are the addresses of the pages beside.
	Query, Sort, Found string
	Sorts              []sortOption
	Prev               string
	// Filtered is true for a search by exact field filters (Filters).
	Filtered bool
	Filters  []filterRow
	// Columns are the fields shown in the list.
	Columns   []string
	Customers []customerRow
	// Next is the address of the next page, "" on the last.
	Next string
	// Bounded is true when the page stopped at the scan bound before it
	// was full: Next continues the search, and Searched says how many
	// customers the search has read so far.
	Bounded         bool
	Searched, Bound string
	// Fields suggests field names for the search.
	Fields []string
}

type sortOption struct{ Value, Label string }

var sortOptions = []sortOption{{"newest", "newest first"}, {"oldest", "oldest first"}, {"name", "by name"}, {"email", "by email"}}

type customerRow struct {
	ID     string
	Values []string
}

// listColumns are the fields the customer list shows.
var listColumns = []string{"external_id", "email", "phone_number", "first_name", "last_name", "tags"}

// searchFields are the fields the search suggests; any other field
// (a company's own included) may be typed.
var searchFields = []string{"external_id", "email", "phone_number", "customer_token", "first_name", "last_name",
	"company", "street_address", "zip_code", "city", "country", "language", "tags", "mailing_lists",
	"can_email", "can_sms", "can_post", "can_push", "can_profile", "birth_date", "date_joined", "last_login", "id"}

// handleCustomers lists the company's customers, filtered as the API's
// retrieval filters them (equality on any field, list membership), paged
// in id order. Unlike the API, a page reads at most searchScanBound
// customers: when they hold less than a page of matches, it shows those
// and offers to search on from the last customer read (the parameter
// searched carries how many were read before, for the page to say).
func (c *Console) handleCustomers(g *gin.Context) error {
	q := g.Request.URL.Query()
	if len(q["f"]) == 0 {
		return c.searchCustomers(g)
	}
	pq := readmodels.PageQuery{CompanyID: companyOf(g).ID, Limit: pageSize, After: q.Get("after"), MaxScan: searchScanBound}
	v := customersView{Columns: listColumns, Fields: searchFields}
	fields, values := q["f"], q["v"]
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || i >= len(values) {
			continue
		}
		v.Filters = append(v.Filters, filterRow{Field: f, Value: values[i]})
		pq.Filters = append(pq.Filters, readmodels.Filter{Field: f, Value: values[i]})
	}
	if len(pq.Filters) > maxFilters {
		return domain.Errorf(domain.Invalid, "at most %d filters are accepted, got %d", maxFilters, len(pq.Filters))
	}
	page, err := c.app.Queries.Customers.Retrieve(g.Request.Context(), pq)
	if err != nil {
		return err
	}
	if v.Customers, err = customerRows(newBudget(), page.Docs); err != nil {
		return err
	}
	if page.Next != "" {
		next := url.Values{"after": {page.Next}}
		for _, f := range v.Filters {
			next.Add("f", f.Field)
			next.Add("v", f.Value)
		}
		if page.Scanned > 0 {
			// Only a page read under the bound counts what it read.
			searched, _ := strconv.ParseInt(q.Get("searched"), 10, 64)
			searched = max(searched, 0) + int64(page.Scanned)
			next.Set("searched", strconv.FormatInt(searched, 10))
			if page.ScanBounded {
				v.Bounded, v.Searched, v.Bound = true, formatCount(float64(searched)), formatCount(searchScanBound)
			}
		}
		v.Next = Prefix + "/customers?" + next.Encode()
	}
	if len(v.Filters) == 0 {
		v.Filters = []filterRow{{}}
	}
	v.Filtered, v.Sorts = true, sortOptions
	c.render(g, http.StatusOK, "customers", "Customers", "customers", v)
	return nil
}

// searchCustomers lists the customers a typed text finds (?q=), as
// readmodels.Customers.Search finds them: case-insensitive prefixes of
// names, emails and ids, at bounded cost; sorted (?sort=) and paged
// (?page=) through at most readmodels.SearchMaxMatches matches.
func (c *Console) searchCustomers(g *gin.Context) error {
	text := g.Query("q")
	if len(text) > maxSearchBytes {
		return domain.Errorf(domain.Invalid, "a search is at most %d characters", maxSearchBytes)
	}
	sort := g.Query("sort")
	if !slices.ContainsFunc(sortOptions, func(o sortOption) bool { return o.Value == sort }) {
		sort = sortOptions[0].Value
	}
	pageNo, err := queryInt(g, "page", 0)
	if err != nil {
		return err
	}
	pageNo = min(pageNo, readmodels.SearchMaxMatches/pageSize)
	m, err := c.app.Queries.Customers.Search(g.Request.Context(), readmodels.CustomerSearch{
		CompanyID: companyOf(g).ID, Text: text, Sort: sort, Offset: int(pageNo) * pageSize, Limit: pageSize})
	if err != nil {
		return err
	}
	v := customersView{Query: text, Sort: sort, Sorts: sortOptions, Columns: listColumns, Fields: searchFields, Filters: []filterRow{{}}}
	v.Found = formatCount(float64(m.Total))
	if m.AtLeast {
		v.Found = "at least " + v.Found
	}
	shown := newBudget()
	for _, raw := range m.Docs {
		doc, err := decodeDoc(raw)
		if err != nil {
			return err
		}
		row := customerRow{ID: fmt.Sprint(doc["id"])}
		for _, col := range listColumns {
			row.Values = append(row.Values, shown.cell(doc[col]).Text)
		}
		v.Customers = append(v.Customers, row)
	}
	at := func(n int64) string {
		p := url.Values{}
		if text != "" {
			p.Set("q", text)
		}
		if sort != sortOptions[0].Value {
			p.Set("sort", sort)
		}
		if n > 0 {
			p.Set("page", strconv.FormatInt(n, 10))
		}
		if len(p) == 0 {
			return Prefix + "/customers"
		}
		return Prefix + "/customers?" + p.Encode()
	}
	if pageNo > 0 {
		v.Prev = at(pageNo - 1)
	}
	if (pageNo+1)*pageSize < int64(m.Total) {
		v.Next = at(pageNo + 1)
	}
	c.render(g, http.StatusOK, "customers", "Customers", "customers", v)
	return nil
}

// maxSearchBytes bounds the text of a search.
const maxSearchBytes = 200

func decodeDoc(raw json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("console: a retrieved document is not a JSON object: %w", err)
	}
	return doc, nil
}

// customerView is a customer's page.
type customerView struct {
	ID string
	// Name is the person's name, else an identifier, for the title.
	Name               string
	Forgotten, Deleted bool
	// Fields are the customer as retrieval shows it, by name; nil when
	// the read model does not show it (deleted, or not yet projected).
	Fields []valueRow
	// Cut is true when a value of the page is not shown whole: Download
	// is the address of the customer as retrieval answers it.
	Cut      bool
	Download string
	// Timeline is a page of the customer's record changes, events and
	// sales together, newest first; Newer and Older are the addresses of
	// the pages beside it ("" when none), and Capped says the timeline
	// stops at the newest timelineMax events and sales.
	Timeline     []timelineEntry
	Newer, Older string
	Capped       bool
	// Run is the run of a delete or forget just asked for.
	Run *runView
	// CanDestroy is whether the user may delete and forget.
	CanDestroy bool
	// Segments are the segments the customer is in now, with when it
	// entered each; HasSegments is whether the console reads segments.
	Segments    []customerSegment
	HasSegments bool
}

// customerSegment is a segment a customer is in.
type customerSegment struct {
	Key, Name, Entered string
}

type fieldRow struct{ Name, Value string }

// valueRow is a stored value by name, as the page shows it.
type valueRow struct {
	Name  string
	Value shownText
}

// timelineEntry is one entry of a customer's timeline: a change of its
// record (an event of its history), an event or a sale that names it.
type timelineEntry struct {
	At time.Time
	// Kind is "change", "event" or "sale"; Title says what happened and
	// Type is the history's event type or the event's type.
	Kind, Title, Type string
	Version           int64
	// RunID, Actor and Source are who recorded a change: Actor as people
	// read it (an email, an integration, a token's name).
	RunID, Actor, Source, CorrelationID string
	Changes                             []valueRow
	Fields                              []string
	Redacted                            bool
	// Details are an event's or a sale's figures (a sale's total with
	// its currency).
	Details []fieldRow
}

// When is the entry's time as the page shows it.
func (e timelineEntry) When() string { return e.At.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// Datetime is the entry's time for the <time> element.
func (e timelineEntry) Datetime() string { return e.At.UTC().Format(time.RFC3339Nano) }

// timelinePage is the length of a page of the timeline; timelineMax
// bounds the events and the sales a timeline reads (the newest of each),
// whatever page is asked for.
const (
	timelinePage = 50
	timelineMax  = 1000
)

// handleCustomer shows a customer: its fields and its timeline (the
// changes of its record, its events and its sales by date, newest first,
// a page at a time: ?page=<n>). A forgotten customer shows as forgotten
// and nothing more.
func (c *Console) handleCustomer(g *gin.Context) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	id := g.Param("id")
	h, err := c.app.Queries.CustomerHistory.Customer(ctx, co.ID, id)
	if err != nil {
		return err
	}
	pageNo, err := queryInt(g, "page", 0)
	if err != nil {
		return err
	}
	v := customerView{ID: id, Forgotten: h.Forgotten, Deleted: h.Deleted,
		CanDestroy: imports.MayDestroy(principalOf(g)), Download: Prefix + "/customers/" + url.PathEscape(id) + "/document"}
	if runID := g.Query("run"); runID != "" {
		if v.Run, err = c.runOf(ctx, co.ID, runID, 10); err != nil {
			return err
		}
	}
	if h.Forgotten {
		c.render(g, http.StatusOK, "customer", "Forgotten customer", "customers", v)
		return nil
	}
	shown := newBudget()
	raw, err := c.app.Queries.Customers.Doc(ctx, co.ID, id)
	if err != nil && domain.ErrorCode(err) != domain.NotFound {
		return err
	}
	var doc map[string]any
	if err == nil {
		if doc, err = decodeDoc(raw); err != nil {
			return err
		}
		names := make([]string, 0, len(doc))
		for k := range doc {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			v.Fields = append(v.Fields, valueRow{Name: k, Value: shown.cell(doc[k])})
		}
	}
	if c.app.Queries.Segments != nil {
		in, err := c.app.Queries.Segments.CustomerSegments(ctx, co.ID, id)
		if err != nil {
			return err
		}
		v.HasSegments = true
		for _, cs := range in {
			v.Segments = append(v.Segments, customerSegment{Key: cs.Key, Name: shown.text(cs.Name, shownCellBytes).Text, Entered: whenZero(cs.EnteredAt)})
		}
	}
	// The name is a stored value too: shown within a cell's bound.
	v.Name, _ = cutText(customerName(doc, identityOf(h), id), nameBytes)
	if err := c.customerTimeline(ctx, g, &v, h, int(min(pageNo, timelineMax/timelinePage)), shown); err != nil {
		return err
	}
	v.Cut = shown.cut
	c.render(g, http.StatusOK, "customer", v.Name, "customers", v)
	return nil
}

// nameBytes bounds the customer's name in the page's title and heading.
const nameBytes = 200

// customerName is how the page names a customer: first and last name,
// else its email, external id or phone number, else its id.
func customerName(doc map[string]any, ident map[string]string, id string) string {
	str := func(k string) string { s, _ := doc[k].(string); return strings.TrimSpace(s) }
	if n := strings.TrimSpace(str("first_name") + " " + str("last_name")); n != "" {
		return n
	}
	for _, f := range []string{customer.FieldEmail, customer.FieldExternalID, customer.FieldPhoneNumber} {
		if s := str(f); s != "" {
			return s
		}
		if s := ident[f]; s != "" {
			return s
		}
	}
	return "Customer " + id
}

// customerTimeline fills v's timeline with page n: the customer's
// history (read whole, as the history endpoint reads it) with its newest
// events and sales, at most timelineMax of each, by date, newest first.
func (c *Console) customerTimeline(ctx context.Context, g *gin.Context, v *customerView, h readmodels.History, n int, shown *budget) error {
	co := companyOf(g)
	currency := currencyOf(co)
	names := newActors(ctx, c.app.Queries, co.ID)
	var all []timelineEntry
	for _, e := range h.Events {
		actor, err := names.name(e.Metadata.Actor)
		if err != nil {
			return err
		}
		all = append(all, timelineEntry{
			At: e.RecordedAt, Kind: "change", Title: changeTitle(e.Type), Type: e.Type, Version: e.Version,
			RunID: e.Metadata.RunID, Actor: actor, Source: e.Metadata.Source, CorrelationID: e.Metadata.CorrelationID,
			Changes: changeRows(e.Changes, shown), Fields: e.Fields, Redacted: e.Redacted,
		})
	}
	// The pages up to n, and one entry more, come from at most that many
	// of each.
	limit := min((n+1)*timelinePage+1, timelineMax)
	events, err := activityDocs(ctx, c.app.Queries.Events, co.ID, v.ID, limit)
	if err != nil {
		return err
	}
	sales, err := activityDocs(ctx, c.app.Queries.Sales, co.ID, v.ID, limit)
	if err != nil {
		return err
	}
	v.Capped = len(events) == timelineMax || len(sales) == timelineMax
	for _, doc := range events {
		e := timelineEntry{At: docTime(doc["date"]), Kind: "event", Type: shown.cell(doc["type"]).Text}
		e.Title = "Event " + e.Type
		for _, f := range []string{"product_id", "path", "campaign_key", "value"} {
			if val := shown.cell(doc[f]).Text; val != "" {
				e.Details = append(e.Details, fieldRow{Name: strings.TrimSuffix(f, "_id"), Value: val})
			}
		}
		all = append(all, e)
	}
	for _, doc := range sales {
		e := timelineEntry{At: docTime(doc["sale_date"]), Kind: "sale", Title: "Sale " + shown.cell(doc["sale_external_id"]).Text}
		if total, ok := doc["sale_total"]; ok {
			e.Details = append(e.Details, fieldRow{Name: "total", Value: formatMoney(total, currency)})
		}
		if cur, _ := doc["sale_currency"].(string); cur != "" && cur != currency {
			if total, ok := doc["sale_total_in_currency"]; ok {
				e.Details = append(e.Details, fieldRow{Name: "in " + cur, Value: formatMoney(total, cur)})
			}
		}
		if st := shown.cell(doc["sale_state"]).Text; st != "" {
			e.Details = append(e.Details, fieldRow{Name: "state", Value: st})
		}
		all = append(all, e)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.After(all[j].At) })
	from := min(n*timelinePage, len(all))
	to := min(from+timelinePage, len(all))
	v.Timeline = all[from:to]
	base := Prefix + "/customers/" + url.PathEscape(v.ID)
	if n > 0 {
		v.Newer = base + "?page=" + strconv.Itoa(n-1) + "#timeline"
	}
	if to < len(all) && (n+1)*timelinePage < timelineMax {
		v.Older = base + "?page=" + strconv.Itoa(n+1) + "#timeline"
	}
	return nil
}

// changeTitle says what a history event did to the record.
func changeTitle(typ string) string {
	switch typ {
	case "CustomerUpserted":
		return "Record changed"
	case "CustomerDeleted":
		return "Deleted"
	case "CustomerForgotten":
		return "Forgotten"
	}
	return typ
}

// docTime reads a document's date (RFC 3339, or a date), the zero time
// when it has none.
func docTime(v any) time.Time {
	s, _ := v.(string)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// handleCustomerDocument answers the customer as retrieval answers it,
// for download: the customer's page shows each value within bounds
// (shownText) and links here when one is cut.
func (c *Console) handleCustomerDocument(g *gin.Context) error {
	raw, err := c.app.Queries.Customers.Doc(g.Request.Context(), companyOf(g).ID, g.Param("id"))
	if err != nil {
		return err
	}
	download(g, "customer.json", "application/json", raw)
	return nil
}

// changeRows lists what an event changed, field by field.
func changeRows(ch *customer.Changes, shown *budget) []valueRow {
	if ch == nil {
		return nil
	}
	var out []valueRow
	names := make([]string, 0, len(ch.Set))
	for k := range ch.Set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := shown.cell(normalise(ch.Set[k]))
		v.Text = "= " + v.Text
		out = append(out, valueRow{Name: k, Value: v})
	}
	for _, k := range ch.Unset {
		out = append(out, valueRow{Name: k, Value: shownText{Text: "removed"}})
	}
	for _, m := range []struct {
		op  string
		set map[string][]string
	}{{"added", ch.Add}, {"taken out", ch.Remove}} {
		for _, k := range sortedKeys(m.set) {
			v := shown.cell(m.set[k])
			v.Text = m.op + ": " + v.Text
			out = append(out, valueRow{Name: k, Value: v})
		}
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// normalise turns a []string (as Changes may hold) into []any for shown.
func normalise(v any) any {
	if l, ok := v.([]string); ok {
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return v
}

// identity fields find a customer in a record; customer_token first, as
// it names exactly one customer and nothing else.
var identityFields = []string{customer.FieldToken, customer.FieldExternalID, customer.FieldEmail, customer.FieldPhoneNumber}

// identityOf folds the history into the customer's current identifiers.
func identityOf(h readmodels.History) map[string]string {
	out := map[string]string{}
	for _, e := range h.Events {
		if e.Changes == nil {
			continue
		}
		for _, f := range identityFields {
			if v, ok := e.Changes.Set[f].(string); ok {
				out[f] = v
			}
			if slices.Contains(e.Changes.Unset, f) {
				delete(out, f)
			}
		}
	}
	return out
}

// activityDocs reads the customer's newest events or sales, at most
// limit, newest first.
func activityDocs(ctx context.Context, r app.Activity, companyID, customerID string, limit int) ([]map[string]any, error) {
	if r == nil {
		return nil, nil
	}
	docs, err := r.OfCustomer(ctx, companyID, customerID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(docs))
	for _, raw := range docs {
		doc, err := decodeDoc(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, nil
}

// destroyActions are the irreversible acts on a customer the console
// offers, each the record field the API takes for it.
var destroyActions = map[string]struct {
	field, verb, warning string
}{
	"delete": {customer.FieldIsDeleted, "Delete",
		"Deleting cannot be undone: the customer leaves retrieval and marketing, and every later record for it is rejected."},
	"forget": {customer.FieldIsForgotten, "Forget",
		"Forgetting cannot be undone: the customer's data key is destroyed, so every value in its history, events and sales becomes unreadable for good, in the log and in every backup. Only the fact that it was forgotten remains."},
}

// confirmView is the confirmation page of a delete or forget.
type confirmView struct {
	ID, Action, Verb, Warning string
	Identity                  []fieldRow
}

// handleConfirmDestroy asks to confirm a delete or forget, naming what
// cannot be undone. Only admins may (imports.MayDestroy): others get a
// 403 page.
func (c *Console) handleConfirmDestroy(g *gin.Context) error {
	a, ok := destroyActions[g.Param("action")]
	if !ok {
		return domain.Errorf(domain.NotFound, "no such page")
	}
	if !imports.MayDestroy(principalOf(g)) {
		return errMayNotDestroy()
	}
	h, err := c.app.Queries.CustomerHistory.Customer(g.Request.Context(), companyOf(g).ID, g.Param("id"))
	if err != nil {
		return err
	}
	v := confirmView{ID: h.CustomerID, Action: g.Param("action"), Verb: a.verb, Warning: a.warning}
	ident := identityOf(h)
	for _, f := range identityFields {
		if val, ok := ident[f]; ok {
			v.Identity = append(v.Identity, fieldRow{Name: f, Value: val})
		}
	}
	c.render(g, http.StatusOK, "confirm", a.verb+" customer", "customers", v)
	return nil
}

func errMayNotDestroy() error {
	return domain.Errorf(domain.Forbidden, "deleting and forgetting need the admin role")
}

// handleDestroy deletes or forgets the customer as the API does: it
// uploads the one customer record that asks for it (its identifier and
// is_deleted or is_forgotten), and shows the customer with its run.
func (c *Console) handleDestroy(g *gin.Context) error {
	a, ok := destroyActions[g.Param("action")]
	if !ok {
		return domain.Errorf(domain.NotFound, "no such page")
	}
	p := principalOf(g)
	if !imports.MayDestroy(p) {
		return errMayNotDestroy()
	}
	if c.app.Commands.Importers[importing.Customers] == nil {
		return domain.Errorf(domain.NotFound, "customers are not imported by this server")
	}
	ctx := g.Request.Context()
	co := companyOf(g)
	h, err := c.app.Queries.CustomerHistory.Customer(ctx, co.ID, g.Param("id"))
	if err != nil {
		return err
	}
	ident := identityOf(h)
	record := map[string]any{a.field: true}
	for _, f := range identityFields {
		// One identifier: the first of token, external_id, email, phone.
		if v, ok := ident[f]; ok {
			record[f] = v
			break
		}
	}
	if len(record) == 1 {
		return domain.Errorf(domain.Conflict, "the customer has no identifier left to name it by")
	}
	body, err := json.Marshal([]any{record})
	if err != nil {
		return err
	}
	up, err := c.app.Commands.Uploads.Handle(c.srv.CommandContext(g, source), imports.StageUpload{
		Principal: p, Entity: importing.Customers, Format: ingest.JSON, Body: bytes.NewReader(body), Source: source,
	})
	if err != nil {
		return err
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/customers/"+url.PathEscape(h.CustomerID)+"?run="+url.QueryEscape(up.RunID))
	return nil
}

// source is the source recorded on the runs and events of what the
// console does.
const source = "console"

// customerRows are the rows of a list of customers' documents, their
// values shown within the page's budget.
func customerRows(shown *budget, docs []json.RawMessage) ([]customerRow, error) {
	rows := make([]customerRow, 0, len(docs))
	for _, raw := range docs {
		doc, err := decodeDoc(raw)
		if err != nil {
			return nil, err
		}
		row := customerRow{ID: fmt.Sprint(doc["id"])}
		for _, col := range listColumns {
			row.Values = append(row.Values, shown.cell(doc[col]).Text)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
