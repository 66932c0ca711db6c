package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// The access page creates tokens, integrations and SFTP keys through the
// commands of POST /api/access-tokens/, POST /api/integrations/ and
// /api/sftp-keys/, which decide who may: the console decides nothing, so
// a staff user who asks for what needs the admin role gets the command's
// 403, as from the API.

// maxAccessFormBytes bounds the access page's forms: a public key, a
// list of scopes.
const maxAccessFormBytes = 64 << 10

// accessView is the access page.
type accessView struct {
	Tokens []tokenRow
	// AllTokens is whether Tokens are every token of the company (an
	// admin's view) or the user's own.
	AllTokens bool
	// Created is the token just created, whose value is shown this once.
	Created      *createdToken
	Integrations []access.Integration
	// IntegrationsHidden is why the integrations are not listed, if so.
	IntegrationsHidden string
	// SFTP is whether the server has SFTP keys; SFTPKeys are listed to
	// admins only, as GET /api/sftp-keys/ is.
	SFTP       bool
	SFTPHidden string
	SFTPKeys   []access.SFTPKey
	// Form holds what a refused form had, to be sent again.
	Form  accessForm
	Error string
}

type tokenRow struct {
	ID, Name, Owner, Hint, CreatedBy, Created string
	Roles, Scopes                             string
}

type createdToken struct {
	ID, Name, Owner, Value string
}

type accessForm struct {
	Name, Owner, Scopes string
	Transfer            bool
}

func (c *Console) handleAccess(g *gin.Context) error {
	v, err := c.accessPage(g)
	if err != nil {
		return err
	}
	if id := g.Query("created"); id != "" {
		// The token just created, shown this once: its value is in the
		// cookie its creation set, cleared now.
		if value := createdTokenValue(g, id); value != "" {
			for _, t := range v.Tokens {
				if t.ID == id {
					v.Created = &createdToken{ID: t.ID, Name: t.Name, Owner: t.Owner, Value: value}
				}
			}
		}
	}
	c.render(g, http.StatusOK, "access", "Access", "access", v)
	return nil
}

func (c *Console) accessPage(g *gin.Context) (accessView, error) {
	ctx := g.Request.Context()
	co := companyOf(g)
	p := principalOf(g)
	v := accessView{AllTokens: access.SeesEveryAccessToken(p)}
	tokens, err := c.app.Queries.Access.AccessTokens(ctx, co.ID)
	if err != nil {
		return v, err
	}
	// The tokens GET /api/access-tokens/ lists to p: its own, or, to an
	// admin, every token of the company.
	// Owners and creators are named as people read them: a user's
	// email, an integration's name.
	names := newActors(ctx, c.app.Queries, co.ID)
	for _, t := range access.VisibleAccessTokens(p, tokens) {
		r := newTokenRow(t)
		if r.Owner, err = names.owner(t.OwnerID); err != nil {
			return v, err
		}
		if t.CreatedBy == "system" || t.CreatedBy == "" {
			r.CreatedBy = "the system"
		} else if r.CreatedBy, err = names.owner(t.CreatedBy); err != nil {
			return v, err
		}
		v.Tokens = append(v.Tokens, r)
	}
	if err := access.MayReadIntegrations(p); err != nil {
		v.IntegrationsHidden = domain.ErrorMessage(err)
	} else if v.Integrations, err = c.app.Queries.Access.Integrations(ctx, co.ID); err != nil {
		return v, err
	}
	if c.app.Queries.SFTPKeys != nil {
		v.SFTP = true
		if err := access.MayManageSFTPKeys(p); err != nil {
			v.SFTPHidden = domain.ErrorMessage(err)
		} else if v.SFTPKeys, err = c.app.Queries.SFTPKeys.List(ctx, co.ID); err != nil {
			return v, err
		}
	}
	return v, nil
}

func newTokenRow(t access.AccessToken) tokenRow {
	r := tokenRow{ID: t.ID, Name: t.Name, Owner: t.OwnerID, Hint: t.Hint, CreatedBy: t.CreatedBy,
		Created: t.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC")}
	roles := make([]string, len(t.TransferredRoles))
	for i, role := range t.TransferredRoles {
		roles[i] = string(role)
	}
	r.Roles = strings.Join(roles, ", ")
	scopes := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = strings.TrimSpace(s.Method + " " + s.Path)
	}
	r.Scopes = strings.Join(scopes, ", ")
	return r
}

// readAccessForm parses a form of the access page.
func readAccessForm(g *gin.Context) error {
	g.Request.Body = http.MaxBytesReader(g.Writer, g.Request.Body, maxAccessFormBytes)
	if err := g.Request.ParseForm(); err != nil {
		return domain.Errorf(domain.Invalid, "the form could not be read: %v", err)
	}
	return nil
}

// handleCreateToken creates an access token as POST /api/access-tokens/
// does (commands.CreateAccessToken) and sends the browser to the access
// page, which shows its value this once: the value is kept nowhere but in
// a cookie of a minute that the page clears (createdTokenCookie), and the
// page is not stored (Cache-Control: no-store).
func (c *Console) handleCreateToken(g *gin.Context) error {
	if err := readAccessForm(g); err != nil {
		return err
	}
	f := g.Request.PostForm
	form := accessForm{Name: f.Get("name"), Owner: f.Get("owner"), Scopes: f.Get("scopes"), Transfer: f.Get("transfer") != ""}
	scopes, err := parseScopes(form.Scopes)
	if err == nil {
		var t access.AccessToken
		var value string
		t, value, err = c.app.Commands.CreateAccessToken.Handle(c.srv.CommandContext(g, source), commands.CreateAccessToken{
			Principal: principalOf(g), Name: form.Name, OwnerID: form.Owner, Scopes: scopes, TransferPrivileges: form.Transfer,
		})
		if err == nil {
			// POST/redirect/GET: the value goes to the page that shows it
			// in a cookie that page clears, so that a reload of the page
			// creates nothing and shows the value no more.
			setCreatedTokenCookie(g, t.ID, value)
			g.Redirect(http.StatusSeeOther, Prefix+"/access?created="+url.QueryEscape(t.ID)+"#created-token")
			return nil
		}
	}
	return c.accessRefused(g, form, err)
}

// accessRefused shows the access page again with a refused form's
// error, or the error page when the refusal is not the form's (a 403,
// a server error).
func (c *Console) accessRefused(g *gin.Context, form accessForm, err error) error {
	switch domain.ErrorCode(err) {
	case domain.Invalid, domain.Validation, domain.Conflict, domain.NotFound:
	default:
		return err
	}
	status, _, msg := c.srv.Problem(g, err)
	v, perr := c.accessPage(g)
	if perr != nil {
		return perr
	}
	v.Form, v.Error = form, msg
	c.render(g, status, "access", "Access", "access", v)
	return nil
}

// createdTokenCookie carries a token's value from its creation (the POST)
// to the page that shows it (the GET it redirects to), and no further:
// HttpOnly, SameSite=Strict, for the access page's path alone, for a
// minute at most, and cleared by the page that reads it. The value is
// the token's id and its value, so that only the page of that token
// shows it.
const createdTokenCookie = "clientele_created_token"

// createdTokenLifetime bounds how long a created token's value waits in
// the browser for its page.
const createdTokenLifetime = time.Minute

func setCreatedTokenCookie(g *gin.Context, id, value string) {
	http.SetCookie(g.Writer, &http.Cookie{
		Name: createdTokenCookie, Value: url.QueryEscape(id) + "." + url.QueryEscape(value), Path: Prefix + "/access",
		MaxAge: int(createdTokenLifetime.Seconds()), HttpOnly: true, Secure: secure(g.Request), SameSite: http.SameSiteStrictMode,
	})
}

// createdTokenValue is the value of the token id just created, from its
// cookie, which it clears; "" when the cookie is gone or names another.
func createdTokenValue(g *gin.Context, id string) string {
	ck, err := g.Request.Cookie(createdTokenCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(g.Writer, &http.Cookie{
		Name: createdTokenCookie, Value: "", Path: Prefix + "/access", MaxAge: -1,
		HttpOnly: true, Secure: secure(g.Request), SameSite: http.SameSiteStrictMode,
	})
	gotID, value, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return ""
	}
	gotID, err1 := url.QueryUnescape(gotID)
	value, err2 := url.QueryUnescape(value)
	if err1 != nil || err2 != nil || gotID != id {
		return ""
	}
	return value
}

// parseScopes reads scopes one a line: "[METHOD] /path".
func parseScopes(text string) ([]access.Scope, error) {
	var out []access.Scope
	for line := range strings.Lines(text) {
		fields := strings.Fields(line)
		switch len(fields) {
		case 0:
			continue
		case 1:
			out = append(out, access.Scope{Path: fields[0]})
		case 2:
			out = append(out, access.Scope{Method: strings.ToUpper(fields[0]), Path: fields[1]})
		default:
			return nil, domain.Errorf(domain.Invalid, "a scope is a line of an optional method and a path (GET /api/data/customers/), not %q", strings.TrimSpace(line))
		}
	}
	return out, nil
}

// handleRevokeToken revokes a token as DELETE /api/access-tokens/<id>/
// does (commands.RevokeAccessToken): a user its own, an admin any.
func (c *Console) handleRevokeToken(g *gin.Context) error {
	err := c.app.Commands.RevokeAccessToken.Handle(c.srv.CommandContext(g, source), commands.RevokeAccessToken{
		Principal: principalOf(g), TokenID: g.Param("token"),
	})
	if err != nil {
		return err
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/access#tokens")
	return nil
}

// handleCreateIntegration creates an integration as POST
// /api/integrations/ does (admin role).
func (c *Console) handleCreateIntegration(g *gin.Context) error {
	if err := readAccessForm(g); err != nil {
		return err
	}
	f := g.Request.PostForm
	_, err := c.app.Commands.CreateIntegration.Handle(c.srv.CommandContext(g, source), commands.CreateIntegration{
		Principal: principalOf(g), IntegrationName: f.Get("integration_name"), Name: f.Get("name"), Description: f.Get("description"),
	})
	if err != nil {
		return c.accessRefused(g, accessForm{}, err)
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/access#integrations")
	return nil
}

// handleAddSFTPKey registers a public key as POST /api/sftp-keys/ does
// (admin role).
func (c *Console) handleAddSFTPKey(g *gin.Context) error {
	if err := readAccessForm(g); err != nil {
		return err
	}
	f := g.Request.PostForm
	_, err := c.app.Commands.AddSFTPKey.Handle(c.srv.CommandContext(g, source), commands.AddSFTPKey{
		Principal: principalOf(g), PublicKey: f.Get("public_key"), Name: f.Get("name"),
	})
	if err != nil {
		return c.accessRefused(g, accessForm{}, err)
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/access#sftp-keys")
	return nil
}

// handleRemoveSFTPKey removes a key as DELETE /api/sftp-keys/<id>/ does
// (admin role).
func (c *Console) handleRemoveSFTPKey(g *gin.Context) error {
	err := c.app.Commands.RemoveSFTPKey.Handle(c.srv.CommandContext(g, source), commands.RemoveSFTPKey{
		Principal: principalOf(g), KeyID: g.Param("key"),
	})
	if err != nil {
		return err
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/access#sftp-keys")
	return nil
}
