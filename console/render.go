package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
)

// The pages are Go templates and the assets plain files, embedded in the
// binary: the console needs nothing at run time but the binary, and no
// page loads anything from another origin.
//
//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the parsed templates, one set per page: each page is the
// layout with the page's own blocks.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"whenp": func(t *time.Time) string {
		if t == nil {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"join": strings.Join,
}

func parsePages() (*pages, error) {
	// The layout and the partials ("_*.html") are in every page's set.
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console: templates: %w", err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// navItem is an entry of the navigation. The sections still to come are
// listed, not linked, so that the layout already has their place.
type navItem struct {
	Section, Label, Path string
	Later                bool
}

var nav = []navItem{
	{Section: "overview", Label: "Overview", Path: Prefix + "/"},
	{Section: "customers", Label: "Customers", Path: Prefix + "/customers"},
	{Section: "segments", Label: "Segments", Path: Prefix + "/segments"},
	{Section: "imports", Label: "Imports", Path: Prefix + "/imports"},
	{Section: "datatargets", Label: "Datatargets", Path: Prefix + "/datatargets"},
	{Section: "campaigns", Label: "Campaigns", Path: Prefix + "/campaigns"},
	{Section: "access", Label: "Access", Path: Prefix + "/access"},
	{Section: "operations", Label: "Operations", Path: Prefix + "/operations"},
}

// view is what every page is given.
type view struct {
	Title   string
	Section string
	Nav     []navItem
	Company company.Company
	// User is the logged-in user, nil on the log-in and error pages
	// before log-in.
	User    *access.User
	IsAdmin bool
	Data    any
}

// render writes a page. The page is rendered to memory first, so that a
// template error is an error page, never half a page.
func (c *Console) render(g *gin.Context, status int, name, title, section string, data any) {
	v := view{Title: title, Section: section, Nav: nav, Company: companyOf(g), Data: data}
	if u, ok := g.Get(keyUser); ok {
		user := u.(access.User)
		v.User = &user
		v.IsAdmin = access.IsAdmin(user.Principal())
	}
	var b bytes.Buffer
	if err := c.pages.byName[name].ExecuteTemplate(&b, "layout", v); err != nil {
		c.srv.Problem(g, fmt.Errorf("console: render %s: %w", name, err))
		g.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("internal error"))
		return
	}
	g.Header("Cache-Control", "no-store")
	g.Data(status, "text/html; charset=utf-8", b.Bytes())
}

// download answers a stored value whole, as a file named name: what a
// page shows of it is bounded (shownText), this is not.
func download(g *gin.Context, name, ctype string, body []byte) {
	g.Header("Cache-Control", "no-store")
	g.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	g.Data(http.StatusOK, ctype, body)
}

// errorView is what the error page shows.
type errorView struct {
	Status  int
	Code    domain.Code
	Message string
}

// fail answers err: in JSON to the console's scripts, else as an error
// page, with the status the API gives the same error (api.Server.Problem).
func (c *Console) fail(g *gin.Context, err error) {
	status, code, msg := c.srv.Problem(g, err)
	if g.Writer.Written() {
		return
	}
	if wantsJSON(g.Request) {
		g.AbortWithStatusJSON(status, gin.H{"error": gin.H{"code": code, "message": msg}})
		return
	}
	title := http.StatusText(status)
	if status == http.StatusForbidden {
		title = "Not allowed"
	}
	c.render(g, status, "error", title, "", errorView{Status: status, Code: code, Message: msg})
	g.Abort()
}

// wantsJSON reports whether the request is one of the console's scripts
// asking for data, not a page.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// handleStatic serves the stylesheet and the script. Their names carry no
// version: a short max-age keeps them fresh after an upgrade.
func (c *Console) handleStatic(g *gin.Context) {
	name := g.Param("file")
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil || strings.Contains(name, "/") {
		g.Header("Cache-Control", "no-store")
		g.Data(http.StatusNotFound, "text/plain; charset=utf-8", []byte("not found"))
		return
	}
	ctype := "application/octet-stream"
	switch path.Ext(name) {
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	g.Header("Cache-Control", "public, max-age=300")
	g.Data(http.StatusOK, ctype, b)
}
