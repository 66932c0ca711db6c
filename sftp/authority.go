package sftp

import (
	"context"
	"fmt"
	"time"

	pkgsftp "github.com/pkg/sftp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// A log-in is not a licence for the life of the connection: a token
// revoked, or a key removed, ends what it opened (docs/access.md,
// "Revocation"). The credential is checked again, through the same read
// models as the log-in, at each effect of the session (opening a file,
// renaming or removing one, completing an upload) and before a queued
// file's import begins; a connection whose credential is gone is closed,
// and a queued file whose credential is gone goes to failed/ unimported.
// Between effects, a connection's credential is also checked every
// Config.RecheckInterval, so that an idle or listing session ends too.

// credential is what a connection logged in with: its principal, and
// the fingerprint of its key when it logged in with one (a key is found
// again by its fingerprint, as at log-in).
type credential struct {
	p           access.Principal
	fingerprint string
}

// refusalGrace is how long a connection whose credential is gone stays
// open after a request was refused for it: time for the refusal to reach
// the client.
const refusalGrace = 200 * time.Millisecond

// defaultRecheckInterval is how often an open connection's credential is
// checked between its effects (Config.RecheckInterval).
const defaultRecheckInterval = 2 * time.Second

// authority returns the principal c's credential gives now, or a
// domain.Unauthorized error that says, in the client's terms, that it was
// revoked. Any other error (the database away) is returned as is: the
// effect it guards does not happen, but nothing is said revoked.
func (s *Server) authority(ctx context.Context, c credential) (access.Principal, error) {
	if c.p.SFTPKeyID != "" {
		if c.fingerprint == "" {
			// A job queued by a version that did not record the key's
			// fingerprint, before it stopped: received under the key
			// while it was registered.
			return c.p, nil
		}
		k, err := s.cfg.Keys.ByFingerprint(ctx, c.p.CompanyID, c.fingerprint)
		if domain.ErrorCode(err) == domain.NotFound || err == nil && k.ID != c.p.SFTPKeyID {
			return access.Principal{}, errKeyRemoved()
		}
		if err != nil {
			return access.Principal{}, err
		}
		return c.p, nil
	}
	p, err := s.cfg.Tokens.Recheck(ctx, c.p)
	if domain.ErrorCode(err) == domain.Unauthorized {
		return access.Principal{}, errTokenRevoked()
	}
	if err != nil {
		return access.Principal{}, err
	}
	if p.CompanyID != c.p.CompanyID {
		return access.Principal{}, errTokenRevoked()
	}
	return p, nil
}

func errKeyRemoved() error {
	return domain.Errorf(domain.Unauthorized, "the SFTP key this session logged in with was removed")
}

func errTokenRevoked() error {
	return domain.Errorf(domain.Unauthorized, "the access token this session logged in with was revoked")
}

// revoked reports whether err says the credential is gone.
func revoked(err error) bool { return domain.ErrorCode(err) == domain.Unauthorized }

// check checks the tree's credential before an effect. When it is gone
// the connection is closed and the request refused (permission denied,
// with the reason); when it cannot be checked now, the request fails and
// the connection stays.
func (t *tree) check() error {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	_, err := t.s.authority(ctx, t.cred)
	switch {
	case err == nil:
		return nil
	case revoked(err):
		// Closed a moment later, so that the client is told why its
		// request failed first; any request meanwhile is refused too.
		time.AfterFunc(refusalGrace, func() { t.end(err) })
		return fmt.Errorf("%s; log in again with a valid one: %w", domain.ErrorMessage(err), pkgsftp.ErrSSHFxPermissionDenied)
	}
	t.log.Warn("sftp: credential not checked; request refused", "err", err)
	return fmt.Errorf("the server cannot check this session's credential now; try again later: %w", pkgsftp.ErrSSHFxFailure)
}

// end closes the tree's connection because its credential is gone: its
// uploads in progress are cut short (and deleted), its sessions end.
func (t *tree) end(err error) {
	t.endOnce.Do(func() {
		t.log.Warn("sftp: credential revoked; connection closed", "err", domain.ErrorMessage(err))
		t.closeConn()
	})
}

// watch checks the tree's credential every Config.RecheckInterval until
// done is closed, and ends the connection once it is gone. One goroutine
// and one indexed look-up per interval per connection, whose number is
// bounded (Config.MaxConnections).
func (t *tree) watch(done <-chan struct{}) {
	tick := time.NewTicker(t.s.cfg.RecheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
		_, err := t.s.authority(ctx, t.cred)
		cancel()
		if revoked(err) {
			t.end(err)
			return
		}
		if err != nil {
			// Checked again at the next tick, and at every effect.
			t.log.Debug("sftp: credential not checked", "err", err)
		}
	}
}
