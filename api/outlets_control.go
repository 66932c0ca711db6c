package api

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// handleChangeOutlet serves PATCH /api/datatargets/<id>/outlets/<outlet_id>/
// (admin role): any of enabled (false pauses, true resumes at the first
// undelivered message), request (any of its keys; headers replace the
// headers whole), is_batched, min_request_interval and secret ("" stops
// signing) and failure_policy ({} retries for ever). It answers the outlet; the change applies from its next
// request.
func (s *Server) handleChangeOutlet(c *gin.Context) error {
	var req struct {
		Enabled            *bool                     `json:"enabled"`
		Request            *datatarget.RequestPatch  `json:"request"`
		IsBatched          *bool                     `json:"is_batched"`
		MinRequestInterval json.RawMessage           `json:"min_request_interval"`
		Secret             *string                   `json:"secret"`
		FailurePolicy      *datatarget.FailurePolicy `json:"failure_policy"`
	}
	if err := decodePatch(c.Request, &req); err != nil {
		return err
	}
	interval, err := parseInterval(req.MinRequestInterval)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	if err := s.commands.ChangeOutlet.Handle(commandContext(c), commands.ChangeOutlet{
		Principal: p, DatatargetID: c.Param("id"), OutletID: c.Param("outlet_id"),
		Patch: datatarget.OutletPatch{Enabled: req.Enabled, Request: req.Request, IsBatched: req.IsBatched,
			MinRequestInterval: interval, Secret: req.Secret, FailurePolicy: req.FailurePolicy},
	}); err != nil {
		return err
	}
	// The read model is inline: it holds the change already.
	return s.answerOutlet(c, c.Param("outlet_id"), true)
}

// handleDeleteOutlet serves DELETE /api/datatargets/<id>/outlets/<outlet_id>/
// (admin role): the outlet stops and answers 404 afterwards. It answers
// 204.
func (s *Server) handleDeleteOutlet(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := s.commands.DeleteOutlet.Handle(commandContext(c), commands.DeleteOutlet{
		Principal: p, DatatargetID: c.Param("id"), OutletID: c.Param("outlet_id"),
	}); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// handleDeleteDatatarget serves DELETE /api/datatargets/<id>/ (admin
// role): the datatarget, its queue and its outlets go, and it answers 404
// afterwards. It answers 204.
func (s *Server) handleDeleteDatatarget(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := s.commands.DeleteDatatarget.Handle(commandContext(c), commands.DeleteDatatarget{
		Principal: p, DatatargetID: c.Param("id"),
	}); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// handleRewindOutlet serves POST /api/datatargets/<id>/outlets/<outlet_id>/rewind/
// (admin role) with {"after": n}: every message numbered above n is sent
// again, in order; n above the outlet's last delivered message is 422.
// It answers the outlet, last_delivered_message_number n.
func (s *Server) handleRewindOutlet(c *gin.Context) error {
	var req struct {
		After *int64 `json:"after"`
	}
	if err := decodePatch(c.Request, &req); err != nil {
		return err
	}
	if req.After == nil {
		return &domain.Error{Code: domain.Validation, Message: "invalid rewind", Details: []domain.FieldError{{Field: "after", Reason: "required"}}}
	}
	p, _ := principalOf(c)
	o, err := s.datatargets.Outlet(c.Request.Context(), p.CompanyID, c.Param("id"), c.Param("outlet_id"))
	if err != nil {
		return err
	}
	if err := s.commands.RewindOutlet.Handle(commandContext(c), commands.RewindOutlet{
		Principal: p, DatatargetID: c.Param("id"), OutletID: c.Param("outlet_id"),
		After: *req.After, Position: o.Progress.LastDeliveredMessageNumber,
	}); err != nil {
		return err
	}
	return s.handleGetOutlet(c)
}
