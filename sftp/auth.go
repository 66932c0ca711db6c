package sftp

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
)

// principalKey is where the authentication callbacks leave the session's
// credential, in ssh.Permissions.ExtraData.
type principalKey struct{}

// authTimeout bounds a connection's handshake and log-in: a client that
// neither logs in nor leaves holds a goroutine and a descriptor.
const authTimeout = 30 * time.Second

func (s *Server) serverConfig() *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		PasswordCallback:  s.passwordLogIn,
		PublicKeyCallback: s.keyLogIn,
		// A few tries per connection: a client offers its keys one by
		// one before it asks for the password.
		MaxAuthTries:  6,
		ServerVersion: "SSH-2.0-Clientele",
		AuthLogCallback: func(conn ssh.ConnMetadata, method string, err error) {
			if err != nil && method != "none" && !errors.Is(err, errKeyUnknown) {
				s.log.Warn("sftp: log-in failed", "user", logUser(conn.User()), "remote", conn.RemoteAddr().String(), "method", method, "err", err)
			}
		},
	}
	cfg.AddHostKey(s.cfg.HostKey)
	return cfg
}

// logUser is a user name as logged: a client may send one of up to
// 256 KiB, six times per connection, and a slug has at most 63 bytes.
func logUser(user string) string {
	const max = 100
	if len(user) <= max {
		return user
	}
	return strings.ToValidUTF8(user[:max], "") + "..."
}

// errKeyUnknown refuses a key that is not registered. Clients offer every
// key they hold, so this is not a failed log-in in itself (it is not
// counted or logged); a connection that ends without logging in is.
var errKeyUnknown = errors.New("public key not registered for this company")

// passwordLogIn accepts an access token of the company named by the user
// name. Every failure counts against the company and the client address
// (LogIns, shared with HTTP password log-ins), and a token whose scopes
// allow no upload is refused: the drop directory is for uploads.
func (s *Server) passwordLogIn(conn ssh.ConnMetadata, password []byte) (perm *ssh.Permissions, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	// Counted under the slug as BySlug reads it: "ACME" or " acme" must
	// not be a fresh count of acme's failures. Names that are no slug
	// at all share one count.
	slug, slugErr := company.NormalizeSlug(conn.User())
	if slugErr != nil {
		slug = ""
	}
	done, err := s.cfg.LogIns.Take("sftp/"+slug, remoteIP(conn.RemoteAddr()))
	if err != nil {
		return nil, err
	}
	defer func() { done(err) }()
	var co company.Company
	if slugErr == nil {
		co, err = s.cfg.Companies.BySlug(ctx, slug)
	}
	if slugErr != nil || domain.ErrorCode(err) == domain.NotFound {
		// The work of a wrong token all the same, so that the time of
		// the answer does not tell which companies exist.
		_, _ = s.cfg.Tokens.AuthenticateToken(ctx, "", string(password))
		return nil, domain.Errorf(domain.Unauthorized, "invalid user name or access token")
	}
	if err != nil {
		return nil, err
	}
	p, err := s.cfg.Tokens.AuthenticateToken(ctx, co.ID, string(password))
	if err != nil {
		return nil, err
	}
	if p.CompanyID != co.ID {
		return nil, domain.Errorf(domain.Unauthorized, "invalid user name or access token")
	}
	if !mayUploadAny(p) {
		return nil, domain.Errorf(domain.Unauthorized, "this access token's scopes allow no upload (POST /api/<entity>/upload/)")
	}
	return permissions(credential{p: p}), nil
}

// keyLogIn accepts a key registered for the company named by the user
// name. It runs when the client offers the key and again once it signed
// with it; only the second logs in.
func (s *Server) keyLogIn(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	fp := ssh.FingerprintSHA256(key)
	slug, err := company.NormalizeSlug(conn.User())
	var co company.Company
	if err == nil {
		co, err = s.cfg.Companies.BySlug(ctx, slug)
	}
	if domain.ErrorCode(err) == domain.NotFound || domain.ErrorCode(err) == domain.Validation {
		// The work of an unknown key all the same (passwordLogIn).
		_, _ = s.cfg.Keys.ByFingerprint(ctx, "", fp)
		return nil, errKeyUnknown
	}
	if err != nil {
		return nil, err
	}
	k, err := s.cfg.Keys.ByFingerprint(ctx, co.ID, fp)
	if domain.ErrorCode(err) == domain.NotFound {
		return nil, errKeyUnknown
	}
	if err != nil {
		return nil, err
	}
	return permissions(credential{p: access.Principal{CompanyID: co.ID, SFTPKeyID: k.ID, OwnerID: "sftp-keys/" + k.ID}, fingerprint: fp}), nil
}

func permissions(c credential) *ssh.Permissions {
	return &ssh.Permissions{ExtraData: map[any]any{principalKey{}: c}}
}

// credentialOf returns the credential the log-in established.
func credentialOf(sc *ssh.ServerConn) (credential, bool) {
	if sc.Permissions == nil {
		return credential{}, false
	}
	c, ok := sc.Permissions.ExtraData[principalKey{}].(credential)
	return c, ok
}

// uploadPath is the HTTP upload route whose scope an SFTP upload of
// entity needs: a token may drop the files it may post.
func uploadPath(entity importing.Entity) string { return "/api/" + string(entity) + "/upload/" }

// mayUpload reports whether p may upload records of entity.
func mayUpload(p access.Principal, entity importing.Entity) bool {
	return access.ScopesAllow(p.Scopes, "POST", uploadPath(entity))
}

// mayUploadAny reports whether p may upload any entity at all.
func mayUploadAny(p access.Principal) bool {
	for _, e := range entities {
		if mayUpload(p, e) {
			return true
		}
	}
	return false
}

func remoteIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
