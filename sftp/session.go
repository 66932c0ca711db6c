package sftp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/clientele/clientele/internal/clientaddr"
	pkgsftp "github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// serveConn runs one SSH connection: handshake and log-in (within
// authTimeout, and within the limits of connections not yet logged in),
// then its channels. Only "session" channels are accepted, and on them
// only the "sftp" subsystem: no shell, no exec, no forwarding, no agent,
// no X11.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	remote := c.RemoteAddr().String()
	sc, chans, reqs, err := s.handshake(c)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			s.log.Info("sftp: connection refused", "remote", remote, "err", err)
		}
		return
	}
	defer sc.Close()
	cred, ok := credentialOf(sc)
	if !ok {
		return
	}
	p := cred.p
	log := s.log.With("company_id", p.CompanyID, "actor", p.Actor(), "remote", remote)
	// Global requests (tcpip-forward, keepalives) are all refused.
	go ssh.DiscardRequests(reqs)
	if !s.held.take(keyCompany(p.CompanyID), s.cfg.MaxConnectionsPerCompany) {
		log.Warn("sftp: too many connections of the company; refused", "max", s.cfg.MaxConnectionsPerCompany)
		// Said on the first channel the client opens, which it shows.
		_ = c.SetDeadline(time.Now().Add(authTimeout))
		if nc, ok := <-chans; ok {
			_ = nc.Reject(ssh.ResourceShortage, fmt.Sprintf("too many connections of this company at once (%d): close one and retry", s.cfg.MaxConnectionsPerCompany))
		}
		return
	}
	defer s.held.give(keyCompany(p.CompanyID))
	log.Info("sftp: logged in")
	t := &tree{s: s, p: p, cred: cred, log: log, closeConn: func() { sc.Close() }}
	watching := make(chan struct{})
	defer close(watching)
	go t.watch(watching)
	sessions := make(chan struct{}, s.cfg.MaxSessionsPerConnection)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.Prohibited, "only the sftp subsystem is served")
			continue
		}
		select {
		case sessions <- struct{}{}:
		default:
			_ = nc.Reject(ssh.ResourceShortage, fmt.Sprintf("too many sessions on this connection (%d)", s.cfg.MaxSessionsPerConnection))
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			<-sessions
			continue
		}
		// Counted in s.wg (this goroutine's count holds it above zero):
		// Serve returns once the session closed its files.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-sessions }()
			s.session(ctx, t, ch, creqs)
		}()
	}
}

// handshake runs the SSH handshake and log-in of c, within authTimeout,
// if there is room for one more connection not yet logged in, in all and
// from c's address.
func (s *Server) handshake(c net.Conn) (*ssh.ServerConn, <-chan ssh.NewChannel, <-chan *ssh.Request, error) {
	addr := keyUnauthFrom(clientaddr.Key(remoteIP(c.RemoteAddr())))
	if !s.held.take(keyUnauth, s.cfg.MaxUnauthenticated) {
		return nil, nil, nil, fmt.Errorf("too many connections not logged in (%d)", s.cfg.MaxUnauthenticated)
	}
	defer s.held.give(keyUnauth)
	if !s.held.take(addr, s.cfg.MaxUnauthenticatedPerAddress) {
		return nil, nil, nil, fmt.Errorf("too many connections not logged in from this address (%d)", s.cfg.MaxUnauthenticatedPerAddress)
	}
	defer s.held.give(addr)
	_ = c.SetDeadline(time.Now().Add(authTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.ssh)
	if err != nil {
		return nil, nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return sc, chans, reqs, nil
}

// session waits for the session's "subsystem sftp" request and serves it;
// every other request (pty-req, env, shell, exec, auth-agent-req, x11-req)
// is refused, and a session that asks for anything but sftp is closed.
func (s *Server) session(ctx context.Context, t *tree, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "subsystem" || !isSFTP(req.Payload) {
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
			if req.Type == "shell" || req.Type == "exec" || req.Type == "subsystem" {
				_, _ = io.WriteString(ch.Stderr(), "This server serves only SFTP (the sftp subsystem).\n")
				return
			}
			continue
		}
		_ = req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		rs := pkgsftp.NewRequestServer(ch, t.handlers())
		stop := context.AfterFunc(ctx, func() { rs.Close() })
		err := rs.Serve()
		stop()
		if err != nil && !errors.Is(err, io.EOF) {
			t.log.Debug("sftp: session ended", "err", err)
		}
		return
	}
}

// isSFTP reports whether a subsystem request's payload (an SSH string)
// names "sftp".
func isSFTP(payload []byte) bool {
	var msg struct{ Name string }
	return ssh.Unmarshal(payload, &msg) == nil && msg.Name == "sftp"
}
