package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/internal/clientaddr"
)

// Credential carriers (docs/openapi.yaml, securitySchemes).
const (
	// tokenUser is the HTTP basic user name that marks the password as an
	// access token.
	tokenUser = "access-token"
	// tokenQuery is the query parameter that may carry an access token.
	tokenQuery = "access-token"
	// headerTOTP carries the current two-factor code of a user who logs in
	// with a password.
	headerTOTP = "Clientele-TOTP-Code"
)

// credentials are what a request presented: a token, or a user's email
// and password, or nothing.
type credentials struct {
	token           string
	email, password string
}

func (cr credentials) none() bool { return cr.token == "" && cr.email == "" }

// credentialsOf reads the credentials of r from, in order, the
// Authorization header (Bearer, Token, or Basic with the user name
// access-token for a token and any other user name for a user's password)
// and the access-token query parameter.
func credentialsOf(r *http.Request) (credentials, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return credentials{token: r.URL.Query().Get(tokenQuery)}, nil
	}
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		if rest == "" {
			return credentials{}, domain.Errorf(domain.Unauthorized, "the Authorization header has no token after %q", scheme)
		}
		return credentials{token: rest}, nil
	case "basic":
		user, pass, ok := r.BasicAuth()
		switch {
		case !ok:
			return credentials{}, domain.Errorf(domain.Unauthorized, "the Authorization header is not valid HTTP basic authentication")
		case user == tokenUser && pass == "":
			return credentials{}, domain.Errorf(domain.Unauthorized, "HTTP basic authentication as %q needs the access token as password", tokenUser)
		case user == tokenUser:
			return credentials{token: pass}, nil
		case user == "" || pass == "":
			return credentials{}, domain.Errorf(domain.Unauthorized, "HTTP basic authentication needs a user name and a password")
		}
		return credentials{email: user, password: pass}, nil
	}
	return credentials{}, domain.Errorf(domain.Unauthorized, "unsupported Authorization scheme %q; send Authorization: Bearer <access token>", scheme)
}

// authenticate identifies the principal of the request within its
// company. A user's password is accepted only where password is true
// (POST /api/access-tokens/): everywhere else an access token is required.
func (s *Server) authenticate(password bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, err := s.principal(c, password)
		if err != nil {
			s.writeError(c, err)
			c.Abort()
			return
		}
		c.Set(keyPrincipal, p)
		c.Next()
	}
}

func (s *Server) principal(c *gin.Context, passwordAllowed bool) (access.Principal, error) {
	co, _ := companyOf(c)
	cr, err := credentialsOf(c.Request)
	if err != nil {
		return access.Principal{}, err
	}
	var p access.Principal
	switch {
	case cr.none():
		return p, domain.Errorf(domain.Unauthorized, "missing credentials: send an access token as Authorization: Bearer <token>")
	case cr.token != "":
		p, err = s.authn.AuthenticateToken(c.Request.Context(), co.ID, cr.token)
	case !passwordAllowed:
		// Refused before the password is checked, so other routes are no
		// oracle for guessing passwords.
		return p, domain.Errorf(domain.Unauthorized, "a user's password is accepted only by POST /api/access-tokens/; create an access token there and send it as Authorization: Bearer <token>")
	default:
		p, err = s.logIn(c, co.ID, cr)
	}
	if err != nil {
		return access.Principal{}, err
	}
	if p.CompanyID != co.ID {
		// The read model already looks credentials up within the company;
		// this keeps a token of one company away from another's data even
		// if it did not.
		return access.Principal{}, domain.Errorf(domain.Unauthorized, "invalid credentials")
	}
	return p, nil
}

// logIn checks a user's email and password (and TOTP code) within the
// company. Failed log-ins are limited per client address and per account
// (the email as users are looked up, access.EmailKey, so no spelling of
// it escapes the count); only attempts answered 401 count: a success, or
// an attempt refused before its check, gives its tokens back, and a
// bucket full again leaves the table (limiter.giveBack), so attempts that
// do not count cannot fill it. The check
// itself runs under s.passwords, so log-ins, however many, hold at most
// Config.PasswordChecks hashes' memory at once.
func (s *Server) logIn(c *gin.Context, companyID string, cr credentials) (p access.Principal, err error) {
	return s.passwordLogIn(c, companyID, cr.email, cr.password, c.GetHeader(headerTOTP))
}

// passwordLogIn is logIn for any door that carries a user's email,
// password and TOTP code (HTTP basic and its header, the console's form).
func (s *Server) passwordLogIn(c *gin.Context, companyID, email, password, totpCode string) (p access.Principal, err error) {
	done, err := s.takeLogIn(companyID+"/"+access.EmailKey(email), c.ClientIP())
	if err != nil {
		return p, err
	}
	defer func() { done(err) }()
	leave, err := s.passwords.enter(c.Request.Context())
	if err != nil {
		return p, err
	}
	defer leave()
	return s.authn.AuthenticatePassword(c.Request.Context(), companyID, email, password, totpCode)
}

// takeLogIn counts a log-in attempt for account and for the client
// address ip, or refuses it with a rateLimitError when either has used up
// its failed log-ins. done must be called with the attempt's outcome:
// only an Unauthorized failure keeps its count.
func (s *Server) takeLogIn(account, ip string) (done func(error), err error) {
	okAddr, wait, giveAddr := s.loginAddrs.take(clientaddr.Key(ip))
	if !okAddr {
		return nil, &rateLimitError{what: "failed log-ins from this address", wait: wait}
	}
	okAccount, wait, giveAccount := s.logins.take(account)
	if !okAccount {
		giveAddr()
		return nil, &rateLimitError{what: "failed log-ins for this account", wait: wait}
	}
	return func(err error) {
		if domain.ErrorCode(err) != domain.Unauthorized {
			giveAddr()
			giveAccount()
		}
	}, nil
}

// LogIns returns the limits of failed log-ins for log-ins that do not
// come through HTTP (the SFTP drop directory, the sftp package). They share
// the HTTP log-ins' tables, so an address guessing over both is counted
// once, and have the same limits (docs/access.md, "Limits").
func (s *Server) LogIns() LogIns { return LogIns{s: s} }

// LogIns limits failed log-ins (Server.LogIns).
type LogIns struct{ s *Server }

// Take counts a log-in attempt to account (a name of the caller's, which
// must not collide with "<company id>/<email>", the HTTP accounts) from
// the client address ip, or refuses it, saying when to retry, when the
// account or the address has used up its failed log-ins. done must be
// called with the attempt's error: a domain.Unauthorized one keeps its
// count, anything else gives it back.
func (l LogIns) Take(account, ip string) (done func(error), err error) {
	return l.s.takeLogIn(account, ip)
}

// authorize enforces the token's scopes on every request, on the path of
// the route the request matched (routedPath): the path that decides what
// runs is the path that is checked. Roles are checked by the commands,
// which know what each use case needs.
func (s *Server) authorize(c *gin.Context) {
	p, _ := principalOf(c)
	if !access.ScopesAllow(p.Scopes, c.Request.Method, routedPath(c)) {
		s.writeError(c, domain.Errorf(domain.Forbidden, "this access token's scopes do not allow %s %s",
			c.Request.Method, c.Request.URL.EscapedPath()))
		c.Abort()
		return
	}
	c.Next()
}

// principalOf returns the authenticated principal of the request.
func principalOf(c *gin.Context) (access.Principal, bool) {
	v, ok := c.Get(keyPrincipal)
	if !ok {
		return access.Principal{}, false
	}
	p, ok := v.(access.Principal)
	return p, ok
}
