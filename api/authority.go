package api

import (
	"context"
	"io"
	"mime"
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

// recheckTimeout bounds one check.
const recheckTimeout = 10 * time.Second

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
	// Not cancelled with the request: a client that closed its side
	// once its body was sent still has its upload staged, and checked.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.c.Request.Context()), recheckTimeout)
	defer cancel()
	_, err := a.s.authn.Recheck(ctx, p)
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
// is read: every recheckInterval, and when the body ends, before the
// bytes of its last read are handed on, so that an upload whose
// credential was revoked before its body ended fails, and nothing of it
// is staged. An upload's reader of JSON or CSV reads to the end of the
// body (to refuse what follows the list, to end the last record), and so
// meets the check. A form (multipart/form-data, the console's upload)
// ends its file at the closing boundary, which may come in an earlier
// read than the body's end: of a form, the last heldBack bytes (more than
// a boundary) are held until the body has ended and was checked; with a
// Content-Length they are its declared last ones, without one (chunked)
// the last ones read so far.
type authorityBody struct {
	io.ReadCloser
	a *authority
	// length is the body's declared length, -1 when unknown.
	length int64
	// hold is how many of its last bytes are held: heldBack for a form,
	// else none.
	hold int64
	// buf[r:w] are the body's bytes from position given to read, read
	// and not yet handed on.
	buf            []byte
	r, w           int
	given, readPos int64
	// end is how the body ended (io.EOF, or its error), once it has and
	// the credential was checked: what is held may go, then end is said.
	end error
}

// heldBack is how much of a form's body is held until its end is known:
// more than its closing boundary (at most 70 characters and 8 more).
const heldBack = 256

func (b *authorityBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		limit := b.readPos - b.hold
		switch {
		case b.end != nil:
			limit = b.readPos
		case b.length >= 0:
			limit = min(b.readPos, b.length-b.hold)
		}
		if free := limit - b.given; free > 0 {
			n := copy(p, b.buf[b.r:b.r+int(free)])
			b.r += n
			b.given += int64(n)
			return n, nil
		}
		if b.end != nil {
			return 0, b.end
		}
		if err := b.a.due(); err != nil {
			b.w, b.end = b.r, err
			return 0, err
		}
		if b.buf == nil {
			b.buf = make([]byte, 64<<10)
		}
		// At most hold bytes are held: the rest of buf is free.
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
		n, err := b.ReadCloser.Read(b.buf[b.w:])
		b.w += n
		b.readPos += int64(n)
		if err != nil {
			// A body that failed fails its upload anyway: its own error
			// is said, unless the credential is gone. One that ended is
			// handed on whole only once the credential was checked.
			cerr := b.a.check()
			if cerr != nil && (err == io.EOF || domain.ErrorCode(cerr) == domain.Unauthorized) {
				b.w, b.end = b.r, cerr
				return 0, cerr
			}
			b.end = err
		}
	}
}

// withAuthority wraps an upload's body in an authorityBody.
func (s *Server) withAuthority(c *gin.Context) {
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		b := &authorityBody{ReadCloser: c.Request.Body, a: s.authorityOf(c), length: c.Request.ContentLength}
		if mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); mt == "multipart/form-data" {
			b.hold = heldBack
		}
		c.Request.Body = b
	}
}
