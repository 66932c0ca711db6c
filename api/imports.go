package api

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/readmodels"
)

// uploadRoutesOf registers paths as the upload routes of entity, if the
// server has an Importer for it. Each importable entity adds one line to
// the route table.
func (s *Server) uploadRoutesOf(entity importing.Entity, paths ...string) {
	if s.importers[entity] == nil {
		return
	}
	for _, p := range paths {
		s.tenant(http.MethodPost, p, s.handleUpload(entity))
		for _, sp := range spellings(p) {
			s.uploadRoutes[sp] = true
		}
	}
}

// handleUpload serves POST /api/<entity>/upload/: it streams the body (a
// JSON list, {"<entity>": [...]}, or CSV) into staged chunks and answers
// once the run is scheduled. A malformed body is answered 400 (413 over
// Config.MaxUploadBytes) and schedules nothing; problems of single records
// are reported on the run.
func (s *Server) handleUpload(entity importing.Entity) handlerFunc {
	return func(c *gin.Context) error {
		format, charset, err := imports.ParseContentType(c.GetHeader("Content-Type"))
		if err != nil {
			return err
		}
		p, _ := principalOf(c)
		// The source is "api" for any HTTP upload, JSON or CSV (decisions.md,
		// Answers): it says which door the records came in by.
		up, err := s.uploads.Handle(commandContext(c), imports.StageUpload{
			Principal: p, Entity: entity, Format: format, Charset: charset, Body: c.Request.Body, Source: "api",
		})
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"response": "ok", "run_id": up.RunID})
		return nil
	}
}

// importRunJSON is an import run without its warnings and rejections:
// an item of GET /api/imports/, and the head of GET /api/imports/<id>/.
type importRunJSON struct {
	RunID      string           `json:"run_id"`
	Entity     importing.Entity `json:"entity"`
	State      importing.State  `json:"state"`
	Source     string           `json:"source"`
	Received   int64            `json:"received"`
	Accepted   int64            `json:"accepted"`
	Rejected   int64            `json:"rejected"`
	Failure    string           `json:"failure,omitempty"`
	CreatedAt  string           `json:"created_at"`
	StartedAt  *string          `json:"started_at"`
	FinishedAt *string          `json:"finished_at"`
}

func newImportRunJSON(run readmodels.ImportRun) importRunJSON {
	out := importRunJSON{
		RunID: run.ID, Entity: run.Entity, State: run.State, Source: run.Source,
		Received: run.Received, Accepted: run.Accepted, Rejected: run.Rejected, Failure: run.Failure,
		CreatedAt: timestamp(run.CreatedAt),
	}
	if run.StartedAt != nil {
		t := timestamp(*run.StartedAt)
		out.StartedAt = &t
	}
	if run.FinishedAt != nil {
		t := timestamp(*run.FinishedAt)
		out.FinishedAt = &t
	}
	return out
}

// importJSON is an import run as GET /api/imports/<id>/ answers it.
type importJSON struct {
	importRunJSON
	Warnings   []warningJSON   `json:"warnings"`
	Rejections []rejectionJSON `json:"rejections"`
	NextURL    string          `json:"next_url,omitempty"`
}

// warningJSON is a field the run's imported records carried that is no
// field of the entity, and was ignored.
type warningJSON struct {
	Field      string `json:"field"`
	Count      int    `json:"count"`
	FirstIndex int    `json:"first_index"`
}

type rejectionJSON struct {
	Index  int     `json:"index"`
	Reason string  `json:"reason"`
	Field  *string `json:"field"`
}

// handleGetImport serves GET /api/imports/<run_id>/ (our addition): the
// run's state, source, counts and timestamps, its warnings (the fields
// ignored, each once), and its rejections in upload order, paged with
// limit and cursor (next_url).
func (s *Server) handleGetImport(c *gin.Context) error {
	limit, after, err := rejectionsQuery(c.Request.URL)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	ctx := c.Request.Context()
	run, err := s.imports.Run(ctx, p.CompanyID, c.Param("id"))
	if err != nil {
		return err
	}
	rejections, next, err := s.imports.Rejections(ctx, run.ID, after, limit)
	if err != nil {
		return err
	}
	out := importJSON{
		importRunJSON: newImportRunJSON(run), Warnings: make([]warningJSON, 0, len(run.Warnings)),
		Rejections: make([]rejectionJSON, 0, len(rejections)),
	}
	for _, w := range run.Warnings {
		out.Warnings = append(out.Warnings, warningJSON(w))
	}
	for _, r := range rejections {
		rj := rejectionJSON{Index: r.Index, Reason: r.Reason}
		if r.Field != "" {
			rj.Field = &r.Field
		}
		out.Rejections = append(out.Rejections, rj)
	}
	if next != "" {
		out.NextURL = nextURL(c.Request, encodeCursor(next))
	}
	c.JSON(http.StatusOK, gin.H{"import": out})
	return nil
}

// rejectionsQuery reads limit (default 100, at most 10,000) and cursor.
func rejectionsQuery(u *url.URL) (limit int, after string, err error) {
	q := u.Query()
	if limit, err = limitParam(q, readmodels.DefaultLimit, readmodels.MaxLimit); err != nil {
		return 0, "", err
	}
	if v := q.Get("cursor"); v != "" {
		if after, err = decodeCursor(v); err != nil {
			return 0, "", invalidParam("cursor", "is not a cursor of this endpoint; follow next_url")
		}
	}
	return limit, after, nil
}
