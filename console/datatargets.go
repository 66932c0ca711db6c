package console

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/readmodels"
)

// The datatargets pages read what GET /api/datatargets/..., .../retrieve/
// and the outlet log endpoints read, through the same read model
// (api.Datatargets), and show outlet credentials masked to whoever the
// API masks them for (datatarget.Outlet.RequestFor, datatarget.LogEntry.For).

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// datatargetsView is the list of datatargets.
type datatargetsView struct {
	Datatargets []datatargetRow
}

type datatargetRow struct {
	ID, Name, Type, Datatype string
	Enabled                  bool
	Messages                 int64
	Outlets, Failing         int
}

func (c *Console) handleDatatargets(g *gin.Context) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	list, err := c.app.Queries.Datatargets.Datatargets(ctx, co.ID)
	if err != nil {
		return err
	}
	failing, err := c.app.Queries.Datatargets.FailingOutlets(ctx, co.ID)
	if err != nil {
		return err
	}
	nFailing := map[string]int{}
	for _, s := range failing {
		nFailing[s.DatatargetID]++
	}
	v := datatargetsView{}
	for _, d := range list {
		v.Datatargets = append(v.Datatargets, datatargetRow{
			ID: d.ID, Name: d.Name, Type: string(d.Type), Datatype: string(d.Settings.Datatype), Enabled: d.Enabled,
			Messages: d.LastMessageNumber, Outlets: len(d.Outlets), Failing: nFailing[d.ID],
		})
	}
	c.render(g, http.StatusOK, "datatargets", "Datatargets", "datatargets", v)
	return nil
}

// datatargetView is a datatarget's page: its outlets and a page of its
// messages, newest first.
type datatargetView struct {
	D        datatarget.Datatarget
	Fields   string
	Outlets  []outletRow
	Messages []messageRow
	// From and To are the numbers of the page's newest and oldest
	// messages (0 when the page is empty).
	From, To int64
	// Newer and Older are the addresses of the neighbouring pages, ""
	// when there is none; Newest that of the first page.
	Newer, Older, Newest string
}

type outletRow struct {
	ID, Type, Method, URL, State, StateClass string
	Delivered, Batches                       int64
	FailedAttempts                           int
	LastAttempt, NextAttempt, DisabledReason string
	Entries                                  int64
}

type messageRow struct {
	Number int64
	Body   shownText
	// Summary is the message on one line, cut short: what its collapsed
	// row shows.
	Summary string
	// Download is the address of the whole message.
	Download string
}

// summaryBytes bounds a collapsed message's line.
const summaryBytes = 160

// handleDatatarget shows a datatarget: its outlets with their state and
// its messages newest first, a page at a time (?before=<number> for
// older ones), each collapsed to a line until opened. A page is a range
// of GET /api/datatargets/<id>/retrieve/?after=, read as the API reads
// it.
func (c *Console) handleDatatarget(g *gin.Context) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	d, err := c.app.Queries.Datatargets.Datatarget(ctx, co.ID, g.Param("id"))
	if err != nil {
		return err
	}
	before, err := queryInt(g, "before", 0)
	if err != nil {
		return err
	}
	// Messages are numbered consecutively: the page ends at the newest
	// message below before and holds the pageSize below that.
	last := d.LastMessageNumber
	if before > 0 {
		last = min(last, before-1)
	}
	after := max(0, last-pageSize)
	states, err := c.app.Queries.Datatargets.OutletStates(ctx, co.ID, d.ID)
	if err != nil {
		return err
	}
	v := datatargetView{D: d, Outlets: outletRows(principalOf(g), d.Outlets, states)}
	for i, f := range d.Settings.Fields {
		if i > 0 {
			v.Fields += ", "
		}
		v.Fields += f
	}
	first := int64(1) // the first message kept
	if last > after {
		page, err := c.app.Queries.Datatargets.Messages(ctx, co.ID, d.ID, after, int(last-after))
		if pruned := (*readmodels.PrunedError)(nil); errors.As(err, &pruned) {
			// The messages before were pruned (docs/datatargets.md,
			// Retention): the page starts at the first one kept.
			first, after = pruned.First, min(last, pruned.First-1)
			page, err = readmodels.MessagePage{}, nil
			if last > after {
				page, err = c.app.Queries.Datatargets.Messages(ctx, co.ID, d.ID, after, int(last-after))
			}
		}
		if err != nil {
			return err
		}
		shown := newBudget()
		for i := len(page.Messages) - 1; i >= 0; i-- {
			n := page.LastMessageNumber - int64(len(page.Messages)-1-i)
			body := shown.json(page.Messages[i], shownValueBytes)
			summary, _ := cutText(strings.Join(strings.Fields(body.Text), " "), summaryBytes)
			v.Messages = append(v.Messages, messageRow{Number: n, Body: body, Summary: summary, Download: messagePath(d.ID, n)})
		}
	}
	if len(v.Messages) > 0 {
		v.From, v.To = v.Messages[0].Number, v.Messages[len(v.Messages)-1].Number
		if v.To > first {
			v.Older = datatargetPath(d.ID) + "?before=" + formatInt(v.To) + "#messages"
		}
	}
	if last < d.LastMessageNumber {
		v.Newest = datatargetPath(d.ID) + "#messages"
		v.Newer = v.Newest
		if newer := last + pageSize + 1; newer <= d.LastMessageNumber {
			v.Newer = datatargetPath(d.ID) + "?before=" + formatInt(newer) + "#messages"
		}
	}
	c.render(g, http.StatusOK, "datatarget", d.Name, "datatargets", v)
	return nil
}

// outletRows joins outlets with their delivery states.
func outletRows(p access.Principal, outlets []datatarget.Outlet, states []readmodels.OutletState) []outletRow {
	byID := map[string]readmodels.OutletState{}
	for _, s := range states {
		byID[s.OutletID] = s
	}
	var out []outletRow
	for _, o := range outlets {
		u := o.RequestFor(p).URL
		s := byID[o.ID]
		r := outletRow{ID: o.ID, Type: o.Type, Method: o.Request.Method, URL: u,
			Delivered: o.Progress.LastDeliveredMessageNumber, Batches: o.Progress.DeliveredBatchCount,
			FailedAttempts: s.FailedAttempts, LastAttempt: whenZero(s.LastAttemptAt), NextAttempt: whenZero(s.NextAttemptAt),
			DisabledReason: s.DisabledReason, Entries: s.Entries}
		r.State, r.StateClass = outletState(o, s)
		out = append(out, r)
	}
	return out
}

// outletState names an outlet's state for people.
func outletState(o datatarget.Outlet, s readmodels.OutletState) (label, class string) {
	switch {
	case !o.Enabled:
		return "disabled", "bad"
	case s.FailedAttempts > 0:
		return "failing (" + strconv.Itoa(s.FailedAttempts) + " attempts)", "bad"
	case s.Entries == 0:
		return "waiting for a message", "idle"
	default:
		return "delivering", "ok"
	}
}

// handleMessage answers one message of a datatarget as it is stored, for
// download: the page shows a message within bounds (shownText) and links
// here for the whole of one too large to show.
func (c *Console) handleMessage(g *gin.Context) error {
	n, err := strconv.ParseInt(g.Param("number"), 10, 64)
	if err != nil || n < 1 {
		return domain.Errorf(domain.NotFound, "no such message")
	}
	co := companyOf(g)
	page, err := c.app.Queries.Datatargets.Messages(g.Request.Context(), co.ID, g.Param("id"), n-1, 1)
	if err != nil {
		return err
	}
	if len(page.Messages) != 1 || page.LastMessageNumber != n {
		return domain.Errorf(domain.NotFound, "no such message")
	}
	download(g, "message-"+formatInt(n)+".json", "application/json", page.Messages[0])
	return nil
}

// handleOutletContent answers an outlet's content template as it is
// stored, for download.
func (c *Console) handleOutletContent(g *gin.Context) error {
	_, o, err := c.outletOf(g)
	if err != nil {
		return err
	}
	download(g, "outlet-"+o.ID+"-content.json", "application/json", o.Request.Content)
	return nil
}

// handleAttemptRaw answers an attempt's raw request or reply
// (part "request" or "reply") as the log keeps it, masked as the page
// masks it, for download.
func (c *Console) handleAttemptRaw(g *gin.Context) error {
	n, err := strconv.ParseInt(g.Param("entry"), 10, 64)
	part := g.Param("part")
	if err != nil || n < 1 || (part != "request" && part != "reply") {
		return domain.Errorf(domain.NotFound, "no such log entry")
	}
	d, o, err := c.outletOf(g)
	if err != nil {
		return err
	}
	e, err := c.app.Queries.Datatargets.LogEntry(g.Request.Context(), companyOf(g).ID, d.ID, o.ID, n)
	if err != nil {
		return err
	}
	e = e.For(principalOf(g))
	text := e.HTTPRequest
	if part == "reply" {
		text = e.HTTPReply
	}
	download(g, "attempt-"+formatInt(n)+"-"+part+".txt", "text/plain; charset=utf-8", []byte(text))
	return nil
}

// outletOf reads the datatarget and the outlet the address names
// (:id, :outlet), each NotFound when the company has no such one.
func (c *Console) outletOf(g *gin.Context) (datatarget.Datatarget, datatarget.Outlet, error) {
	ctx := g.Request.Context()
	co := companyOf(g)
	d, err := c.app.Queries.Datatargets.Datatarget(ctx, co.ID, g.Param("id"))
	if err != nil {
		return d, datatarget.Outlet{}, err
	}
	o, err := c.app.Queries.Datatargets.Outlet(ctx, co.ID, d.ID, g.Param("outlet"))
	return d, o, err
}

func messagePath(datatargetID string, n int64) string {
	return datatargetPath(datatargetID) + "/messages/" + formatInt(n)
}

// queryInt reads a whole number of at least 0 from the query, def when
// absent.
func queryInt(g *gin.Context, name string, def int64) (int64, error) {
	s := g.Query(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, domain.Errorf(domain.Invalid, "%s must be a whole number of at least 0", name)
	}
	return n, nil
}

// outletView is an outlet's page: its request, state and attempt log,
// and one attempt's raw request and reply when one is chosen.
type outletView struct {
	D       datatarget.Datatarget
	O       outletRow
	Secret  bool
	Headers []fieldRow
	Content shownText
	// ContentDownload is the address of the whole content template.
	ContentDownload string
	Batched         bool
	MaxBatch        int
	Interval        string
	Log             []logRow
	Total           int64
	// Next is the address of the next (older) page of the log.
	Next string
	// Attempt is the attempt chosen, nil when none.
	Attempt *attemptView
	// Control is the outlet's delivery state, parked batches and, for
	// admins, the addresses of its actions (outlet_control.go).
	Control outletControl
}

type logRow struct {
	Number                int64
	Date, Status, Address string
	Reason                shownText
	HTTPStatus            int
	Batch                 int64
	Size                  int
	TimeMS                int64
	OK                    bool
}

type attemptView struct {
	logRow
	Available      bool
	Request, Reply shownText
	// RequestDownload and ReplyDownload are the addresses of the whole
	// request and reply.
	RequestDownload, ReplyDownload string
	Masked                         bool
}

// logPageSize is the length of a page of the attempt log.
const logPageSize = 50

// handleOutlet shows an outlet and its attempt log, newest first
// (?from=<entry> for older pages), as
// GET /api/datatargets/<id>/outlets/<outlet_id>/log/ reads them.
func (c *Console) handleOutlet(g *gin.Context) error {
	v, err := c.outletPage(g, 0)
	if err != nil {
		return err
	}
	c.render(g, http.StatusOK, "outlet", "Outlet", "datatargets", v)
	return nil
}

// handleAttempt shows one attempt of an outlet, with its raw request and
// reply as .../log/<entry_number>/ answers them, above the outlet's log.
func (c *Console) handleAttempt(g *gin.Context) error {
	n, err := strconv.ParseInt(g.Param("entry"), 10, 64)
	if err != nil || n < 1 {
		return domain.Errorf(domain.NotFound, "no such log entry")
	}
	v, err := c.outletPage(g, n)
	if err != nil {
		return err
	}
	c.render(g, http.StatusOK, "outlet", "Attempt "+formatInt(n), "datatargets", v)
	return nil
}

func (c *Console) outletPage(g *gin.Context, entry int64) (outletView, error) {
	ctx := g.Request.Context()
	co := companyOf(g)
	p := principalOf(g)
	d, err := c.app.Queries.Datatargets.Datatarget(ctx, co.ID, g.Param("id"))
	if err != nil {
		return outletView{}, err
	}
	o, err := c.app.Queries.Datatargets.Outlet(ctx, co.ID, d.ID, g.Param("outlet"))
	if err != nil {
		return outletView{}, err
	}
	states, err := c.app.Queries.Datatargets.OutletStates(ctx, co.ID, d.ID)
	if err != nil {
		return outletView{}, err
	}
	rows := outletRows(p, []datatarget.Outlet{o}, states)
	headers := o.RequestFor(p).Headers
	shown := newBudget()
	v := outletView{D: d, O: rows[0], Secret: o.HasSecret(), Batched: o.IsBatched, MaxBatch: o.MaxBatchSize,
		Interval: o.MinRequestInterval.String(), Content: shown.json(o.Request.Content, shownValueBytes),
		ContentDownload: outletPath(d.ID, o.ID) + "/content"}
	for _, k := range sortedHeaderNames(headers) {
		v.Headers = append(v.Headers, fieldRow{Name: k, Value: shown.text(headers[k], shownCellBytes).Text})
	}
	from, err := queryInt(g, "from", 0)
	if err != nil {
		return v, err
	}
	page, err := c.app.Queries.Datatargets.Log(ctx, readmodels.LogQuery{CompanyID: co.ID, DatatargetID: d.ID, OutletID: o.ID,
		From: from, Limit: logPageSize, Descending: true})
	if err != nil {
		return v, err
	}
	v.Total = page.TotalCount
	for _, e := range page.Entries {
		v.Log = append(v.Log, newLogRow(d.ID, o.ID, e.For(p), shown))
	}
	if page.Next > 0 {
		v.Next = outletPath(d.ID, o.ID) + "?from=" + formatInt(page.Next) + "#log"
	}
	if v.Control, err = c.outletControl(g, o, shown); err != nil {
		return v, err
	}
	if entry > 0 {
		e, err := c.app.Queries.Datatargets.LogEntry(ctx, co.ID, d.ID, o.ID, entry)
		if err != nil {
			return v, err
		}
		e = e.For(p)
		raw := attemptPath(d.ID, o.ID, e.EntryNumber)
		v.Attempt = &attemptView{logRow: newLogRow(d.ID, o.ID, e, shown), Available: e.HTTPRequestAvailable,
			Request: shown.text(e.HTTPRequest, shownValueBytes), Reply: shown.text(e.HTTPReply, shownValueBytes),
			RequestDownload: raw + "/request", ReplyDownload: raw + "/reply", Masked: !access.MayReadCredentials(p)}
	}
	return v, nil
}

func newLogRow(datatargetID, outletID string, e datatarget.LogEntry, shown *budget) logRow {
	return logRow{Number: e.EntryNumber, Date: e.Date.UTC().Format("2006-01-02 15:04:05.000 UTC"), Status: e.Status,
		Reason: shown.text(e.FailReason, shownCellBytes), HTTPStatus: e.HTTPStatus, Batch: e.BatchNumber, Size: e.BatchSize, TimeMS: e.RequestTimeMS,
		OK: e.Status == datatarget.StatusOK, Address: attemptPath(datatargetID, outletID, e.EntryNumber)}
}

func sortedHeaderNames(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
