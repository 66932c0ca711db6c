package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
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
	d, err := deploy(ctx, o, "load")
	if err != nil {
		return res, err
	}
	defer d.close()
	url, childEnv, srv, token := d.url, d.env, d.srv, d.token
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
	runs, sent, err := uploadAll(srv.base, token, o)
	if err != nil {
		return res, err
	}
	res.bytes = sent
	res.uploadTime = time.Since(start)

	// Until every accepted record is retrievable.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	accepted, rejected, applied, err := waitRetrievable(ctx, conn, srv.base, token, o.entity, runs)
	if err != nil {
		return res, err
	}
	res.accepted, res.rejected, res.applied = accepted, rejected, applied.Sub(start)
	res.endToEnd = time.Since(start)
	res.cpuEndToEnd = cpu.stop()
	res.peakRSSKiB = peakRSS(srv.cmd.Process.Pid)
	if o.endToEndOnly {
		f, err := measureSegments(ctx, conn)
		res.segments = &f
		res.uploadPerSec = float64(o.n) / res.uploadTime.Seconds()
		res.uploadMBPerSec = float64(res.bytes) / 1e6 / res.uploadTime.Seconds()
		res.e2eRowsPerSec = float64(res.accepted) / res.endToEnd.Seconds()
		return res, err
	}
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

func do(method, url, token string, body io.Reader, contentType string, out any) error {
	return doAs(account{host, email}, method, url, token, body, contentType, out)
}

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

// uploadAll uploads o.n generated records of o.entity, o.perUpload a
// request, one request after another, and returns their runs and the
// bytes sent.
func uploadAll(base, token string, o options) (runs []string, sent int64, err error) {
	for first := 0; first < o.n; first += o.perUpload {
		runID, n, err := upload(base, token, o.entity, generators[o.entity], first, min(o.perUpload, o.n-first))
		if err != nil {
			return nil, 0, err
		}
		sent += n
		runs = append(runs, runID)
	}
	return runs, sent, nil
}

// waitRetrievable waits until the runs are done and every record they
// accepted is retrievable, and returns their counts and when the runs
// were first seen done (their events committed, before the read model
// caught up with them).
func waitRetrievable(ctx context.Context, conn *pgx.Conn, base, token, entity string, runs []string) (accepted, rejected int, applied time.Time, err error) {
	for {
		accepted, rejected, done, err := importProgress(base, token, runs)
		if err != nil {
			return 0, 0, time.Time{}, err
		}
		if done {
			if applied.IsZero() {
				applied = time.Now()
			}
			visible, err := countRetrievable(ctx, conn, entity)
			if err != nil {
				return 0, 0, time.Time{}, err
			}
			if visible >= accepted {
				return accepted, rejected, applied, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, time.Time{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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
