package delivery

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// recorder keeps the bytes that cross a worker's connections during one
// attempt: what was written is the raw request, what was read the raw
// reply. It records above TLS, so an https attempt is logged as readable
// HTTP/1.1 text. A worker makes one request at a time on a transport of
// its own, so every byte between start and stop belongs to that request.
type recorder struct {
	mu                   sync.Mutex
	on                   bool
	req, reply           []byte
	reqTotal, replyTotal int
	maxReq, maxReply     int
}

func (r *recorder) start() {
	r.mu.Lock()
	r.on, r.req, r.reply, r.reqTotal, r.replyTotal = true, r.req[:0], r.reply[:0], 0, 0
	r.mu.Unlock()
}

// stop ends the attempt and returns copies of what was recorded and the
// full sizes (which exceed the copies when truncated).
func (r *recorder) stop() (req, reply []byte, reqTotal, replyTotal int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return append([]byte(nil), r.req...), append([]byte(nil), r.reply...), r.reqTotal, r.replyTotal
}

func (r *recorder) wrote(p []byte) {
	r.mu.Lock()
	if r.on {
		r.reqTotal += len(p)
		r.req = appendCapped(r.req, p, r.maxReq)
	}
	r.mu.Unlock()
}

func (r *recorder) read(p []byte) {
	r.mu.Lock()
	if r.on {
		r.replyTotal += len(p)
		r.reply = appendCapped(r.reply, p, r.maxReply)
	}
	r.mu.Unlock()
}

func appendCapped(dst, p []byte, limit int) []byte {
	if room := limit - len(dst); room < len(p) {
		p = p[:max(room, 0)]
	}
	return append(dst, p...)
}

// recordingConn copies its traffic to a recorder.
type recordingConn struct {
	net.Conn
	rec *recorder
}

func (c recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rec.read(p[:n])
	return n, err
}

func (c recordingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.rec.wrote(p[:n])
	return n, err
}

// newClient returns the HTTP client of one worker: HTTP/1.1 only (the log
// keeps the request and reply as text), no proxy (the guard must see the
// receiver's address), no redirects (a 3xx is a failed attempt, and the
// guard would otherwise be asked about an address the outlet's owner did
// not configure), no transparent decompression (the reply is logged as
// sent), every connection dialled through the SSRF guard and recorded.
// Names are looked up by Go's own resolver, which obeys the attempt's
// context: a lookup ends with its attempt (RequestTimeout) or its worker,
// where the system's (cgo) resolver would go on in a thread of its own.
func (c Config) newClient(rec *recorder) *http.Client {
	dialer := &net.Dialer{Timeout: c.RequestTimeout, KeepAlive: 30 * time.Second, Control: guard{allow: c.AllowCIDRs}.control,
		Resolver: &net.Resolver{PreferGo: true}}
	tlsConfig := c.TLSConfig.Clone()
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.NextProtos = []string{"http/1.1"}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return recordingConn{Conn: conn, rec: rec}, nil
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			cfg := tlsConfig.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName, _, _ = net.SplitHostPort(addr)
			}
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return recordingConn{Conn: tc, rec: rec}, nil
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
