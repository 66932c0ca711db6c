package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg"
)

const (
	slug     = "load"
	host     = slug + ".localhost"
	email    = "load@load.test"
	password = "load-driver-password"
)

func run(ctx context.Context, o options) (result, error) {
	res := result{entity: o.entity, n: o.n}
	benchN = o.n
	gen, ok := generators[o.entity]
	if !ok && o.entity != "campaigns" {
		return res, fmt.Errorf("no generator for entity %q", o.entity)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return res, err
	}
	url, childEnv, stop, err := freshDatabase(ctx, o, "load")
	if err != nil {
		return res, err
	}
	defer stop()

	for _, args := range [][]string{
		{"migrate"},
		{"company", "create", slug},
		{"user", "create", "--company", slug, "--email", email, "--password", password, "--role", "admin"},
	} {
		cmd := exec.CommandContext(ctx, o.binary, append(args, "--database-url", url, "--log-level", "warn")...)
		cmd.Env = childEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			return res, fmt.Errorf("clientele %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	srv, err := startServer(ctx, o.binary, url, childEnv, false)
	if err != nil {
		return res, err
	}
	defer srv.stop()

	token, err := createToken(srv.base)
	if err != nil {
		return res, err
	}
	if o.entity == "campaigns" {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return res, err
		}
		defer conn.Close(context.Background())
		cr, err := runCampaigns(ctx, o, srv.base, token, url, childEnv, conn)
		res.campaigns = &cr
		return res, err
	}
	if pre, ok := prerequisites[o.entity]; ok {
		if err := importUntimed(ctx, srv.base, token, pre.entity, pre.n(o.n), o.perUpload); err != nil {
			return res, err
		}
	}

	// Uploads, one after another, each streamed from the generator.
	cpu := startCPU(o.dir, srv.cmd.Process.Pid)
	start := time.Now()
	var runs []string
	for first := 0; first < o.n; first += o.perUpload {
		count := min(o.perUpload, o.n-first)
		runID, n, err := upload(srv.base, token, o.entity, gen, first, count)
		if err != nil {
			return res, err
		}
		res.bytes += n
		runs = append(runs, runID)
	}
	res.uploadTime = time.Since(start)

	// Until every accepted record is retrievable.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	for {
		accepted, rejected, done, err := importProgress(srv.base, token, runs)
		if err != nil {
			return res, err
		}
		if done {
			if res.applied == 0 {
				res.applied = time.Since(start)
			}
			visible, err := countRetrievable(ctx, conn, o.entity)
			if err != nil {
				return res, err
			}
			if visible >= accepted {
				res.accepted, res.rejected = accepted, rejected
				break
			}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	res.endToEnd = time.Since(start)
	res.cpuEndToEnd = cpu.stop()
	res.peakRSSKiB = peakRSS(srv.cmd.Process.Pid)
	if measuresReads(o.entity) {
		if err := pageCustomers(srv.base, token, &res.reads); err != nil {
			return res, err
		}
	}

	// The baselines run on the same database once the server has stopped,
	// so that they compete with nothing of it.
	srv.stop()
	if measuresReads(o.entity) {
		if err := copyOutCustomers(ctx, conn, &res.reads); err != nil {
			return res, err
		}
	}
	// The same records, COPYed into one jsonb table, then stored by
	// batched upserts into one indexed table (upsert.go).
	if res.copyTime, err = copyRecords(ctx, conn, gen, o.n); err != nil {
		return res, err
	}
	cpu = startCPU(o.dir, os.Getpid())
	if res.upsertTime, err = upsertRecords(ctx, conn, o.entity, gen, o.n); err != nil {
		return res, err
	}
	res.cpuUpserts = cpu.stop()
	// The least time storing the run's rows takes (floor.go).
	if res.floor, err = measureFloor(ctx, url, o.entity, o.n); err != nil {
		return res, err
	}
	if measuresReads(o.entity) {
		if err := rebuildCustomers(ctx, o, url, childEnv, conn, res.accepted, &res.reads); err != nil {
			return res, err
		}
	}
	res.uploadPerSec = float64(o.n) / res.uploadTime.Seconds()
	res.uploadMBPerSec = float64(res.bytes) / 1e6 / res.uploadTime.Seconds()
	res.e2eRowsPerSec = float64(res.accepted) / res.endToEnd.Seconds()
	res.copyRowsPerSec = float64(o.n) / res.copyTime.Seconds()
	res.ratioToCopy = res.e2eRowsPerSec / res.copyRowsPerSec
	return res, nil
}

type server struct {
	cmd  *exec.Cmd
	base string
	// sftpAddr is where the SFTP drop directory listens, when started
	// with extra arguments that serve it.
	sftpAddr string
}

// startServer starts serve with the extra arguments and waits until it
// says where it listens (and, with wantSFTP, where SFTP is served).
func startServer(ctx context.Context, binary, url string, env []string, wantSFTP bool, extra ...string) (*server, error) {
	args := append([]string{"serve", "--database-url", url, "--addr", "127.0.0.1:0",
		"--log-level", "warn", "--rate-limit", "1000000", "--rate-burst", "1000000"}, extra...)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`listening on (http://\S+)`)
	reSFTP := regexp.MustCompile(`SFTP drop directory on (\S+)`)
	srv := &server{cmd: cmd}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			srv.base = m[1]
		}
		if m := reSFTP.FindStringSubmatch(lines.Text()); m != nil {
			srv.sftpAddr = m[1]
		}
		if srv.base != "" && (srv.sftpAddr != "" || !wantSFTP) {
			go io.Copy(io.Discard, stdout) //nolint:errcheck
			return srv, nil
		}
	}
	_ = cmd.Wait()
	return nil, errors.New("serve exited before listening")
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

func do(method, url, token string, body io.Reader, contentType string, out any) error {
	return doAs(account{host, email}, method, url, token, body, contentType, out)
}

// account is a company's host and its admin user's email (password
// is the same for all).
type account struct{ host, email string }

// doAs sends a request to the company of acct, with the token or else
// the user's password, and decodes the answer of 200 into out.
func doAs(acct account, method, url, token string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return err
	}
	req.Host = acct.host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else {
		req.SetBasicAuth(acct.email, password)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

func createToken(base string) (string, error) {
	return createTokenAs(account{host, email}, base)
}

func createTokenAs(acct account, base string) (string, error) {
	var v struct {
		AccessToken struct {
			Token string `json:"token"`
		} `json:"access_token"`
	}
	err := doAs(acct, "POST", base+"/api/access-tokens/", "", nil, "", &v)
	return v.AccessToken.Token, err
}

// upload streams count generated records, from index first, as one
// wrapped JSON upload and returns the run id and the bytes sent.
func upload(base, token, entity string, gen generator, first, count int) (string, int64, error) {
	pr, pw := io.Pipe()
	var sent int64
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		n, _ := fmt.Fprintf(bw, `{%q:[`, entity)
		sent += int64(n)
		for i := first; i < first+count; i++ {
			if i > first {
				bw.WriteByte(',')
				sent++
			}
			b := gen(i)
			bw.Write(b)
			sent += int64(len(b))
		}
		bw.WriteString("]}")
		sent += 2
		pw.CloseWithError(bw.Flush())
	}()
	var v struct {
		RunID string `json:"run_id"`
	}
	err := do("POST", base+"/api/"+entity+"/upload/", token, pr, "application/json", &v)
	return v.RunID, sent, err
}

func importProgress(base, token string, runs []string) (accepted, rejected int, done bool, err error) {
	done = true
	for _, id := range runs {
		var v struct {
			Import struct {
				State    string `json:"state"`
				Accepted int    `json:"accepted"`
				Rejected int    `json:"rejected"`
			} `json:"import"`
		}
		if err := do("GET", base+"/api/imports/"+id+"/?limit=1", token, nil, "", &v); err != nil {
			return 0, 0, false, err
		}
		if v.Import.State == "failed" {
			return 0, 0, false, fmt.Errorf("import %s failed", id)
		}
		done = done && v.Import.State == "completed"
		accepted += v.Import.Accepted
		rejected += v.Import.Rejected
	}
	return accepted, rejected, done, nil
}

// retrievable counts, by entity, the imported records the retrieval
// endpoint shows: a sale row is a record, shown in its transaction.
var retrievable = map[string]string{
	"customers": `SELECT count(*) FROM customers WHERE NOT is_deleted`,
	"events":    `SELECT count(*) FROM activity_events WHERE NOT is_deleted`,
	"sales":     `SELECT coalesce(sum(jsonb_array_length(doc->'sale_rows')), 0) FROM sales WHERE NOT is_deleted`,
}

// countRetrievable counts the records the retrieval endpoint would show.
func countRetrievable(ctx context.Context, conn *pgx.Conn, entity string) (int, error) {
	var n int
	err := conn.QueryRow(ctx, retrievable[entity]).Scan(&n)
	return n, err
}

// importUntimed imports n records of entity and waits for their runs:
// what a timed run needs to exist first.
func importUntimed(ctx context.Context, base, token, entity string, n, perUpload int) error {
	fmt.Fprintf(os.Stderr, "importing %d %s first (not timed)\n", n, entity)
	var runs []string
	for first := 0; first < n; first += perUpload {
		runID, _, err := upload(base, token, entity, generators[entity], first, min(perUpload, n-first))
		if err != nil {
			return err
		}
		runs = append(runs, runID)
	}
	for {
		_, _, done, err := importProgress(base, token, runs)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func copyRecords(ctx context.Context, conn *pgx.Conn, gen generator, n int) (time.Duration, error) {
	if _, err := conn.Exec(ctx, `CREATE TABLE load_copy (doc jsonb NOT NULL)`); err != nil {
		return 0, err
	}
	i := 0
	start := time.Now()
	_, err := conn.CopyFrom(ctx, pgx.Identifier{"load_copy"}, []string{"doc"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		return []any{gen(i - 1)}, nil
	}))
	return time.Since(start), err
}

// peakRSS reads the peak resident set size (VmHWM) of a process, in KiB.
func peakRSS(pid int) int64 { return rss(pid, "VmHWM:") }

// freshDatabase starts the embedded PostgreSQL in o.dir and creates a
// database named after prefix and the time, dropped by stop unless
// o.keep. It returns the database's URL and the environment of the run's
// child processes: one master key for all of them, so no key file is
// left behind and every child opens the others' sealed data.
func freshDatabase(ctx context.Context, o options, prefix string) (url string, childEnv []string, stop func(), err error) {
	emb, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: o.dir, Database: "postgres"})
	if err != nil {
		return "", nil, nil, err
	}
	admin, err := pgx.Connect(ctx, emb.URL())
	if err != nil {
		emb.Close()
		return "", nil, nil, err
	}
	dbName := fmt.Sprintf("%s_%d", prefix, time.Now().Unix())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		admin.Close(context.Background())
		emb.Close()
		return "", nil, nil, err
	}
	stop = func() {
		if !o.keep {
			admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") //nolint:errcheck
		}
		admin.Close(context.Background())
		emb.Close()
	}
	childEnv = append(os.Environ(), "CLIENTELE_MASTER_KEY="+base64.StdEncoding.EncodeToString(crypto.NewMasterKey()))
	return emb.ServerURL(dbName), childEnv, stop, nil
}
