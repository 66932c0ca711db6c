package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/readmodels"
)

// logEntryJSON is an attempt as answered; http_request and http_reply
// only in the single-entry view (the reply is absent when none came).
type logEntryJSON struct {
	EntryKey             string  `json:"entry_key,omitempty"`
	EntryNumber          int64   `json:"entry_number"`
	Date                 string  `json:"date"`
	BatchNumber          int64   `json:"batch_number"`
	BatchSize            int     `json:"batch_size"`
	FirstMessageNumber   int64   `json:"first_message_number,omitempty"`
	AfterUpdate          string  `json:"after_update,omitempty"`
	Status               string  `json:"status"`
	HTTPStatus           int     `json:"http_status,omitempty"`
	RequestTimeMS        int64   `json:"request_time_ms"`
	FailReason           string  `json:"fail_reason,omitempty"`
	HTTPRequestAvailable bool    `json:"http_request_available"`
	HTTPRequest          *string `json:"http_request,omitempty"`
	HTTPReply            *string `json:"http_reply,omitempty"`
}

func newLogEntryJSON(e datatarget.LogEntry) logEntryJSON {
	return logEntryJSON{
		EntryNumber: e.EntryNumber, Date: timestampMicros(e.Date), BatchNumber: e.BatchNumber, BatchSize: e.BatchSize,
		FirstMessageNumber: e.FirstMessageNumber, AfterUpdate: e.AfterUpdate, Status: e.Status, HTTPStatus: e.HTTPStatus,
		RequestTimeMS: e.RequestTimeMS, FailReason: e.FailReason, HTTPRequestAvailable: e.HTTPRequestAvailable,
	}
}

// handleOutletLog serves GET /api/datatargets/<id>/outlets/<outlet_id>/log/
// ?limit=&from=&order=: the outlet's attempts, newest first by default.
// from is the entry number to start at; next_url, an absolute address, is
// given when more entries follow.
func (s *Server) handleOutletLog(c *gin.Context) error {
	order := c.DefaultQuery("order", "descending")
	if order != "ascending" && order != "descending" {
		return &domain.Error{Code: domain.Invalid, Message: `query parameter order must be "ascending" or "descending"`,
			Details: []domain.FieldError{{Field: "order", Reason: "must be ascending or descending"}}}
	}
	limit, err := intParam(c, "limit", readmodels.DefaultLogLimit, 1, 1<<31)
	if err != nil {
		return err
	}
	limit = min(limit, readmodels.MaxLogLimit)
	from, err := intParam(c, "from", 0, 1, 1<<62)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	page, err := s.datatargets.Log(c.Request.Context(), readmodels.LogQuery{
		CompanyID: p.CompanyID, DatatargetID: c.Param("id"), OutletID: c.Param("outlet_id"),
		From: from, Limit: int(limit), Descending: order == "descending",
	})
	if err != nil {
		return err
	}
	entries := make([]logEntryJSON, 0, len(page.Entries))
	for _, e := range page.Entries {
		j := newLogEntryJSON(e.For(p))
		j.EntryKey = strconv.FormatInt(e.EntryNumber, 10)
		entries = append(entries, j)
	}
	body := gin.H{"order": order, "limit": limit, "total_count": page.TotalCount, "entries": entries}
	if page.Next > 0 {
		q := c.Request.URL.Query()
		q.Set("order", order)
		q.Set("limit", strconv.FormatInt(limit, 10))
		q.Set("from", strconv.FormatInt(page.Next, 10))
		body["next_url"] = absoluteURL(c.Request, q)
	}
	c.JSON(http.StatusOK, body)
	return nil
}

// handleOutletLogEntry serves
// GET /api/datatargets/<id>/outlets/<outlet_id>/log/<entry_number>/. The
// raw request and reply, and the failure reason, show credentials to
// admins only (datatarget.LogEntry.For).
func (s *Server) handleOutletLogEntry(c *gin.Context) error {
	n, err := strconv.ParseInt(c.Param("entry"), 10, 64)
	if err != nil || n < 1 {
		return domain.Errorf(domain.NotFound, "no such log entry")
	}
	p, _ := principalOf(c)
	e, err := s.datatargets.LogEntry(c.Request.Context(), p.CompanyID, c.Param("id"), c.Param("outlet_id"), n)
	if err != nil {
		return err
	}
	e = e.For(p)
	j := newLogEntryJSON(e)
	j.HTTPRequest = &e.HTTPRequest
	if e.HTTPReply != "" {
		j.HTTPReply = &e.HTTPReply
	}
	c.JSON(http.StatusOK, gin.H{"entry": j})
	return nil
}
