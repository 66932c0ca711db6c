package api

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// A request is authenticated when it arrives, but two kinds last long
// after: an upload streams its body for as long as it needs, and a
// retrieval page is streamed out as the client reads it. Both check
// their credential again while they last (Authenticator.Recheck): every
// recheckInterval, and an upload once more when its body has ended,
// before it is staged. A token revoked (or a console user removed, or
// whose roles shrank) meanwhile ends them: an upload answers 401 and
// imports nothing, a page is cut off (docs/access.md, "Revocation").

// recheckInterval is how often a long request checks its credential.
const recheckInterval = 2 * time.Second

// authority checks one request's credential again.
type authority struct {
	s    *Server
	c    *gin.Context
	next time.Time
}

func (s *Server) authorityOf(c *gin.Context) *authority {
	return &authority{s: s, c: c, next: time.Now().Add(recheckInterval)}
}

// due checks the credential when recheckInterval has passed since the
// last check.
func (a *authority) due() error {
	if time.Now().Before(a.next) {
		return nil
	}
	return a.check()
}

// check checks the credential now. A request not (yet) authenticated,
// or the operator's, has nothing to check.
func (a *authority) check() error {
	a.next = time.Now().Add(recheckInterval)
	p, ok := principalOf(a.c)
	if !ok || p.System || p.TokenID == "" && p.UserID == "" {
		return nil
	}
	_, err := a.s.authn.Recheck(a.c.Request.Context(), p)
	if domain.ErrorCode(err) == domain.Unauthorized {
		return errRevoked(p)
	}
	return err
}

func errRevoked(p access.Principal) error {
	if p.TokenID != "" {
		return domain.Errorf(domain.Unauthorized, "the access token of this request was revoked while it was served; nothing it sent after that is kept")
	}
	return domain.Errorf(domain.Unauthorized, "your session ended while this request was served (your user was removed or its roles changed); nothing it sent after that is kept")
}

// authorityBody checks the request's credential while an upload's body
// is read: every recheckInterval, and at its end, so that a body whose
// credential was revoked before it ended fails, and the upload with it
// (nothing of it is staged).
type authorityBody struct {
	io.ReadCloser
	a *authority
}

func (b *authorityBody) Read(p []byte) (int, error) {
	if err := b.a.due(); err != nil {
		return 0, err
	}
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		if cerr := b.a.check(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// withAuthority wraps an upload's body in an authorityBody.
func (s *Server) withAuthority(c *gin.Context) {
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		c.Request.Body = &authorityBody{ReadCloser: c.Request.Body, a: s.authorityOf(c)}
	}
}
