package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// parkedJSON is a parked batch as answered.
type parkedJSON struct {
	ID                 string `json:"id"`
	FirstMessageNumber int64  `json:"first_message_number"`
	LastMessageNumber  int64  `json:"last_message_number"`
	BatchSize          int    `json:"batch_size"`
	Attempts           int    `json:"attempts"`
	FirstFailedAt      string `json:"first_failed_at"`
	ParkedAt           string `json:"parked_at"`
	LastHTTPStatus     *int   `json:"last_http_status"`
	LastFailReason     string `json:"last_fail_reason"`
	// RedeliveryRequested (addition) is true from an admin's redeliver
	// until the next attempt.
	RedeliveryRequested bool `json:"redelivery_requested"`
}

// handleListParked serves GET /api/datatargets/<id>/outlets/<outlet_id>/parked/:
// {"parked": [...]}, oldest first.
func (s *Server) handleListParked(c *gin.Context) error {
	p, _ := principalOf(c)
	list, err := s.datatargets.Parked(c.Request.Context(), p.CompanyID, c.Param("id"), c.Param("outlet_id"))
	if err != nil {
		return err
	}
	out := make([]parkedJSON, 0, len(list))
	for _, b := range list {
		j := parkedJSON{
			ID: strconv.FormatInt(b.ID, 10), FirstMessageNumber: b.FirstMessageNumber, LastMessageNumber: b.LastMessageNumber,
			BatchSize: b.BatchSize, Attempts: b.Attempts, FirstFailedAt: timestamp(b.FirstFailedAt), ParkedAt: timestamp(b.ParkedAt),
			// The worker writes reasons with the URL masked; masked again
			// as the log's are (datatarget.LogEntry.For).
			LastFailReason: datatarget.MaskText(b.LastFailReason), RedeliveryRequested: b.Redeliver,
		}
		if b.LastHTTPStatus != 0 {
			status := b.LastHTTPStatus
			j.LastHTTPStatus = &status
		}
		out = append(out, j)
	}
	c.JSON(http.StatusOK, gin.H{"parked": out})
	return nil
}

// parkedID reads the :parked_id of a route; one that is not a parked
// batch's is 404, as an unknown one.
func (s *Server) parkedID(c *gin.Context) (int64, error) {
	p, _ := principalOf(c)
	n, err := strconv.ParseInt(c.Param("parked_id"), 10, 64)
	if err == nil && n > 0 {
		list, err := s.datatargets.Parked(c.Request.Context(), p.CompanyID, c.Param("id"), c.Param("outlet_id"))
		if err != nil {
			return 0, err
		}
		for _, b := range list {
			if b.ID == n {
				return n, nil
			}
		}
	}
	return 0, domain.Errorf(domain.NotFound, "no such parked batch")
}

// handleRedeliverParked serves POST .../parked/<parked_id>/redeliver/ and
// POST .../parked/redeliver/ (every parked batch), admin role: the
// batches are sent again, oldest first, ahead of the queue, and leave the
// list once delivered. It answers the list.
func (s *Server) handleRedeliverParked(c *gin.Context) error {
	p, _ := principalOf(c)
	var id int64
	if c.Param("parked_id") != "" {
		n, err := s.parkedID(c)
		if err != nil {
			return err
		}
		id = n
	}
	if err := s.commands.RedeliverParked.Handle(commandContext(c), commands.RedeliverParked{
		Principal: p, DatatargetID: c.Param("id"), OutletID: c.Param("outlet_id"), ParkedID: id,
	}); err != nil {
		return err
	}
	return s.handleListParked(c)
}

// handleDiscardParked serves DELETE .../parked/<parked_id>/ (admin role):
// the batch is dropped, never sent. It answers 204.
func (s *Server) handleDiscardParked(c *gin.Context) error {
	p, _ := principalOf(c)
	id, err := s.parkedID(c)
	if err != nil {
		return err
	}
	if err := s.commands.DiscardParked.Handle(commandContext(c), commands.DiscardParked{
		Principal: p, DatatargetID: c.Param("id"), OutletID: c.Param("outlet_id"), ParkedID: id,
	}); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
