package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/datatarget"
)

// handleListDatatargets serves GET /api/datatargets/: every datatarget of
// the company, oldest first, as {"datatargets": [...]}.
func (s *Server) handleListDatatargets(c *gin.Context) error {
	p, _ := principalOf(c)
	list, err := s.datatargets.Datatargets(c.Request.Context(), p.CompanyID)
	if err != nil {
		return err
	}
	out := make([]datatargetJSON, 0, len(list))
	for _, d := range list {
		out = append(out, newDatatargetJSON(d, p))
	}
	c.JSON(http.StatusOK, gin.H{"datatargets": out})
	return nil
}

// handleCreateDatatarget serves POST /api/datatargets/ (staff role). A
// datasync datatarget also takes datatype, fields (default every field),
// from_start, and segment_key for datatype segment.
func (s *Server) handleCreateDatatarget(c *gin.Context) error {
	var req struct {
		DatatargetType string              `json:"datatarget_type"`
		Name           string              `json:"name"`
		Description    string              `json:"description"`
		Datatype       datatarget.Datatype `json:"datatype"`
		Fields         []string            `json:"fields"`
		FromStart      bool                `json:"from_start"`
		SegmentKey     string              `json:"segment_key"`
		// MessageRetentionDays (admin role): docs/datatargets.md, Retention.
		MessageRetentionDays *int `json:"message_retention_days"`
	}
	if err := decodeJSON(c.Request, &req, false); err != nil {
		return err
	}
	p, _ := principalOf(c)
	d, err := s.commands.CreateDatatarget.Handle(commandContext(c), commands.CreateDatatarget{
		Principal: p, Type: datatarget.Type(req.DatatargetType), Name: req.Name, Description: req.Description,
		Settings: datatarget.Settings{Datatype: req.Datatype, Fields: req.Fields, FromStart: req.FromStart,
			SegmentKey: req.SegmentKey},
		MessageRetentionDays: req.MessageRetentionDays,
	})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"datatarget": newDatatargetJSON(d, p)})
	return nil
}

// handleGetDatatarget serves GET /api/datatargets/<id>/.
func (s *Server) handleGetDatatarget(c *gin.Context) error {
	p, _ := principalOf(c)
	d, err := s.datatargets.Datatarget(c.Request.Context(), p.CompanyID, c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"datatarget": newDatatargetJSON(d, p)})
	return nil
}

// handleUpdateDatatarget serves PATCH /api/datatargets/<id>/: name and
// description (staff role), and enabled (admin role: false pauses the
// delivery of every outlet, true resumes each where it stopped); absent
// or null keys stay as they are, any other key is a 400 (decodePatch).
func (s *Server) handleUpdateDatatarget(c *gin.Context) error {
	var req struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
		Enabled     *bool   `json:"enabled"`
		// MessageRetentionDays (admin role): docs/datatargets.md, Retention.
		MessageRetentionDays *int `json:"message_retention_days"`
	}
	if err := decodePatch(c.Request, &req); err != nil {
		return err
	}
	p, _ := principalOf(c)
	id := c.Param("id")
	if _, err := s.commands.UpdateDatatarget.Handle(commandContext(c), commands.UpdateDatatarget{
		Principal: p, DatatargetID: id, Patch: datatarget.Patch{Name: req.Name, Description: req.Description, Enabled: req.Enabled,
			MessageRetentionDays: req.MessageRetentionDays},
	}); err != nil {
		return err
	}
	// The read model is inline: it already holds the change, with the
	// outlets and counters the command does not know.
	return s.handleGetDatatarget(c)
}
