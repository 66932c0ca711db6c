package imports_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// commitAnswerLost is a TCP proxy to PostgreSQL that, on the connection
// that sends the statement holding marker, passes the next COMMIT on and
// then drops the client's side before the answer comes: the transaction
// commits, and its client is told the connection failed.
//
// With outage set, the database also goes away as the commit's answer
// is lost, as in a failover: every other connection is closed, and the
// next outage connections are closed as soon as they are made.
type commitAnswerLost struct {
	addr    string
	marker  []byte
	cut     atomic.Bool // a commit's answer was lost
	outage  int32
	refuse  atomic.Int32 // connections still to refuse
	refused atomic.Int32
	mu      sync.Mutex
	conns   map[net.Conn]net.Conn // client side to server side
	wg      sync.WaitGroup
}

func newCommitAnswerLost(t *testing.T, server, marker string) *commitAnswerLost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitAnswerLost{addr: ln.Addr().String(), marker: []byte(marker), conns: map[net.Conn]net.Conn{}}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			if p.refuse.Load() > 0 {
				p.refuse.Add(-1)
				p.refused.Add(1)
				client.Close()
				continue
			}
			srv, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns[client] = srv
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.toServer(client, srv) }()
			go func() {
				defer p.wg.Done()
				// Until the client's side is gone and the server says
				// something more: after a lost commit, its answer.
				_, _ = io.Copy(client, srv)
				client.Close()
				srv.Close()
			}()
		}
	}()
	return p
}

func (p *commitAnswerLost) toServer(client, srv net.Conn) {
	armed := false
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			armed = armed || bytes.Contains(chunk, p.marker)
			commit := armed && !p.cut.Load() && bytes.Contains(bytes.ToLower(chunk), []byte("commit"))
			if commit {
				// The client's side goes first: the answer to the
				// COMMIT, which the server still reads and runs, has
				// nowhere to go.
				client.Close()
				p.cut.Store(true)
				if p.outage > 0 {
					p.refuse.Store(p.outage)
					p.mu.Lock()
					for c, other := range p.conns {
						if c != client {
							c.Close()
							other.Close()
						}
					}
					p.mu.Unlock()
				}
			}
			if _, werr := srv.Write(chunk); werr != nil {
				srv.Close()
				return
			}
			if commit {
				return // the server's side closes once it has answered
			}
		}
		if err != nil {
			srv.Close()
			return
		}
	}
}

// TestStageCommitAnswerLost: the scheduling transaction of an upload
// commits but its answer is lost (the connection drops as it commits, as
// in a partition): the upload is accepted, since its run is scheduled
// and will be imported, rather than refused as if nothing had been
// scheduled (a client that sent it again would import it twice). Found
// by make chaos (seed 13), which answered such an upload 503.
func TestStageCommitAnswerLost(t *testing.T) {
	raw := pgtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCommitAnswerLost(t, u.Host, "UPDATE import_runs SET chunks")
	u.Host = proxy.addr
	pool, err := pg.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	body := `[` + strings.Repeat(`{"external_id": "x"},`, 2) + `{"external_id": "y"}]`
	recs, err := ingest.NewRecords(strings.NewReader(body), ingest.JSON, "", imports.UploadShape(importing.Customers), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	run := imports.Run{ID: "lost-answer", CompanyID: "acme", Entity: importing.Customers, Actor: "system", Source: "test", CorrelationID: "c1"}
	n, err := imports.NewStore(pool, imports.TestKeys(t)).Stage(context.Background(), run, recs, ingest.Limits{})
	if !proxy.cut.Load() {
		t.Fatal("the proxy lost no commit's answer: the test tested nothing")
	}
	if err != nil || n != 3 {
		t.Errorf("Stage = %d, %v; want the 3 records accepted", n, err)
	}
	var state string
	if err := pool.QueryRow(context.Background(), `SELECT state FROM import_runs WHERE id = $1`, run.ID).Scan(&state); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if state != string(importing.Scheduled) {
		t.Errorf("the run is %q, want scheduled", state)
	}
}

// TestStageCommitAnswerLostInAFailover: the scheduling transaction of an
// upload commits, its answer is lost, and the database is away for a
// moment, as when the primary crashes just after the commit reached the
// synchronous standby and the standby is not yet promoted: every
// connection is closed and the next ones are refused. Stage asks again
// whether the run was scheduled until the database answers (within 5 s),
// and accepts the upload: it is scheduled. Found by make chaos (seed 44),
// which had an events upload answered 503 during the failover, and its
// event imported.
func TestStageCommitAnswerLostInAFailover(t *testing.T) {
	raw := pgtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCommitAnswerLost(t, u.Host, "UPDATE import_runs SET chunks")
	proxy.outage = 3
	u.Host = proxy.addr
	pool, err := pg.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	recs, err := ingest.NewRecords(strings.NewReader(`[{"external_id": "x"}, {"external_id": "y"}]`), ingest.JSON, "", imports.UploadShape(importing.Customers), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	run := imports.Run{ID: "lost-answer-failover", CompanyID: "acme", Entity: importing.Customers, Actor: "system", Source: "test", CorrelationID: "c1"}
	n, err := imports.NewStore(pool, imports.TestKeys(t)).Stage(context.Background(), run, recs, ingest.Limits{})
	if !proxy.cut.Load() || proxy.refused.Load() == 0 {
		t.Fatalf("lost a commit's answer %v, refused %d connections: the test tested nothing", proxy.cut.Load(), proxy.refused.Load())
	}
	if err != nil || n != 2 {
		t.Errorf("Stage = %d, %v; want the 2 records accepted", n, err)
	}
	var state string
	if err := pool.QueryRow(context.Background(), `SELECT state FROM import_runs WHERE id = $1`, run.ID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != string(importing.Scheduled) {
		t.Errorf("the run is %q, want scheduled", state)
	}
}
