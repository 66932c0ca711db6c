package console

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/readmodels"
)

// runView is an import run as the pages show it.
type runView struct {
	readmodels.ImportRun
	Done       bool
	Rejections []importing.Rejection
	// NextRejections is the address of the next page of rejections.
	NextRejections string
}

// importsView is the imports page.
type importsView struct {
	Runs []readmodels.ImportRun
	Next string
	// Entities are those that can be uploaded.
	Entities []importing.Entity
}

func done(s importing.State) bool { return s == importing.Completed || s == importing.Failed }

// handleImports lists the company's runs, newest first, with the upload
// form.
func (c *Console) handleImports(g *gin.Context) error {
	runs, next, err := c.app.Queries.Imports.Runs(g.Request.Context(), companyOf(g).ID, g.Query("before"), pageSize)
	if err != nil {
		return err
	}
	v := importsView{Runs: runs, Entities: c.entities()}
	if next != "" {
		v.Next = Prefix + "/imports?before=" + url.QueryEscape(next)
	}
	c.render(g, http.StatusOK, "imports", "Imports", "imports", v)
	return nil
}

// entities are the entities the server imports, in a stable order.
func (c *Console) entities() []importing.Entity {
	var out []importing.Entity
	for e := range c.app.Commands.Importers {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// runOf reads a run of the company with the first page of its
// rejections, after the cursor "after".
func (c *Console) runOf(ctx context.Context, companyID, runID string, limit int) (*runView, error) {
	return c.runPage(ctx, companyID, runID, "", limit)
}

func (c *Console) runPage(ctx context.Context, companyID, runID, after string, limit int) (*runView, error) {
	run, err := c.app.Queries.Imports.Run(ctx, companyID, runID)
	if err != nil {
		return nil, err
	}
	rej, next, err := c.app.Queries.Imports.Rejections(ctx, run.ID, after, limit)
	if err != nil {
		return nil, err
	}
	v := &runView{ImportRun: run, Done: done(run.State), Rejections: rej}
	if next != "" {
		v.NextRejections = Prefix + "/imports/" + url.PathEscape(run.ID) + "?after=" + url.QueryEscape(next)
	}
	return v, nil
}

// handleImport shows a run: state, source, counts, warnings and its
// rejections, paged.
func (c *Console) handleImport(g *gin.Context) error {
	v, err := c.runPage(g.Request.Context(), companyOf(g).ID, g.Param("id"), g.Query("after"), pageSize)
	if err != nil {
		return err
	}
	c.render(g, http.StatusOK, "import", "Import run", "imports", v)
	return nil
}

// handleImportStatus answers a run's state and counts in JSON, for the
// pages that watch a run until it is done.
func (c *Console) handleImportStatus(g *gin.Context) error {
	run, err := c.app.Queries.Imports.Run(g.Request.Context(), companyOf(g).ID, g.Param("id"))
	if err != nil {
		return err
	}
	g.Header("Cache-Control", "no-store")
	g.JSON(http.StatusOK, gin.H{"state": run.State, "done": done(run.State),
		"received": run.Received, "accepted": run.Accepted, "rejected": run.Rejected})
	return nil
}

// handleUpload stages an upload from the console's form, through the
// command the API's upload routes use (imports.StageUpload): a
// multipart/form-data body of the field "entity" and then the part
// "file", which is streamed into the run, never held in memory. The
// file's format is its part's Content-Type, else its name's extension
// (.csv, .json). The scripts (Accept: application/json) get the run's
// id and page; a form sent without them is redirected to the page.
func (c *Console) handleUpload(g *gin.Context) error {
	mr, err := g.Request.MultipartReader()
	if err != nil {
		return domain.Errorf(domain.Invalid, "the upload must be a form (multipart/form-data) with the fields entity and file")
	}
	var entity importing.Entity
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return domain.Errorf(domain.Invalid, "the form has no file")
		}
		if err != nil {
			return domain.Errorf(domain.Invalid, "the form could not be read: %v", err)
		}
		switch part.FormName() {
		case "entity":
			b, err := io.ReadAll(io.LimitReader(part, 64))
			if err != nil {
				return domain.Errorf(domain.Invalid, "the form could not be read: %v", err)
			}
			entity = importing.Entity(strings.TrimSpace(string(b)))
		case "file":
			if c.app.Commands.Importers[entity] == nil {
				return domain.Errorf(domain.Invalid, "unknown entity %q: choose one of %v (before the file, in the form)", entity, c.entities())
			}
			return c.stage(g, entity, part)
		}
	}
}

func (c *Console) stage(g *gin.Context, entity importing.Entity, part *multipart.Part) error {
	ctype := part.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ctype); mt == "" || mt == "application/octet-stream" {
		switch strings.ToLower(path.Ext(part.FileName())) {
		case ".csv":
			ctype = "text/csv"
		case ".json":
			ctype = "application/json"
		default:
			return domain.Errorf(domain.Invalid, "the file %q is neither CSV (.csv) nor JSON (.json)", part.FileName())
		}
	}
	format, charset, err := imports.ParseContentType(ctype)
	if err != nil {
		return err
	}
	up, err := c.app.Commands.Uploads.Handle(c.srv.CommandContext(g, source), imports.StageUpload{
		Principal: principalOf(g), Entity: entity, Format: format, Charset: charset, Body: part, Source: source,
	})
	if err != nil {
		return err
	}
	page := Prefix + "/imports/" + url.PathEscape(up.RunID)
	if wantsJSON(g.Request) {
		g.JSON(http.StatusOK, gin.H{"run_id": up.RunID, "received": up.Received, "url": page})
		return nil
	}
	g.Redirect(http.StatusSeeOther, page)
	return nil
}
