package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// The SFTP benchmark (issue 14, docs/benchmarks.md "Customers CSV through
// SFTP"): one CSV file of generated customers, written to disk once, is
// pushed through the SFTP drop directory of a real `serve` by
// github.com/pkg/sftp's client with concurrent writes (64 requests of
// 32 KiB in flight, as OpenSSH's sftp), and then, in the same run on the
// same server, the same file is posted to POST /api/customers/upload/.
// Each goes to a company of its own, so both create every customer.
//
//	go run ./cmd/clientele-load -sftp -csv-bytes 1000000000

// Companies of the SFTP benchmark: the file goes to one by SFTP, to the
// other by HTTP.
const (
	sftpSlug  = "loadsftp"
	httpSlug  = "loadhttp"
	csvHeader = "external_id,email,phone_number,first_name,last_name,street_address,zip_code,city,country,language,can_email,can_sms,date_joined,tags,mailing_lists\n"
)

// customerCSV appends customer i as a CSV line of about 160 bytes: the
// fields of customer (generate.go), lists of one element.
func customerCSV(b []byte, i int) []byte {
	return fmt.Appendf(b, "c-%d,customer%d@example.com,+35840%07d,%s,%s,Mannerheimintie %d,%05d,%s,FI,fi,%t,%t,2024-%02d-%02dT10:%02d:00Z,segment-%d,newsletter\n",
		i, i, i%10_000_000, firstNames[i%len(firstNames)], lastNames[i%len(lastNames)], i%200+1, i%100000,
		cities[i%len(cities)], i%2 == 0, i%3 == 0, i%12+1, i%28+1, i%60, i%7)
}

// ensureCSV writes a CSV file of at least size bytes at path (whole
// customers: it ends at the first line past size), streamed, unless a
// previous run wrote it. It returns the number of customers in it.
func ensureCSV(path string, size int64) (int, error) {
	if n, err := os.ReadFile(path + ".records"); err == nil {
		if c, err := strconv.Atoi(strings.TrimSpace(string(n))); err == nil {
			if _, err := os.Stat(path); err == nil {
				return c, nil
			}
		}
	}
	fmt.Fprintf(os.Stderr, "writing %s (%d MB)\n", path, size/1e6)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	written, _ := w.WriteString(csvHeader)
	total := int64(written)
	n := 0
	var line []byte
	for ; total < size; n++ {
		line = customerCSV(line[:0], n)
		w.Write(line)
		total += int64(len(line))
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return 0, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return 0, err
	}
	return n, os.WriteFile(path+".records", []byte(strconv.Itoa(n)+"\n"), 0o644)
}

// sftpResult holds the figures of one SFTP benchmark run.
type sftpResult struct {
	records int
	bytes   int64

	// SFTP: the transfer (open to close answered), then until the run
	// was scheduled (staged), completed, and every customer projected.
	sftpTransfer, sftpScheduled, sftpCompleted, sftpEndToEnd time.Duration
	sftpAccepted                                             int
	// Peak RSS of serve during the transfer, and during the whole import.
	sftpTransferRSSKiB, sftpRSSKiB int64

	// HTTP: until the upload was answered (the run staged and scheduled),
	// completed, and every customer projected.
	httpScheduled, httpCompleted, httpEndToEnd time.Duration
	httpAccepted                               int
	httpRSSKiB                                 int64
	// startRSSKiB is serve's RSS before the first upload.
	startRSSKiB int64
	// transferOnly: the SFTP figures until scheduled, and no others.
	transferOnly bool
	// httpFirst: the file went over HTTP first.
	httpFirst bool
	// localCopy is the transfer's baseline: the file copied on the same
	// disk and synced.
	localCopy time.Duration
}

func runSFTP(ctx context.Context, o options) (sftpResult, error) {
	var res sftpResult
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return res, err
	}
	csvPath := o.csv
	if csvPath == "" {
		csvPath = filepath.Join(o.dir, fmt.Sprintf("customers-%d.csv", o.csvBytes))
	}
	n, err := ensureCSV(csvPath, o.csvBytes)
	if err != nil {
		return res, err
	}
	fi, err := os.Stat(csvPath)
	if err != nil {
		return res, err
	}
	res.records, res.bytes = n, fi.Size()

	url, childEnv, stop, err := prepare(ctx, o, "load_sftp", nil, sftpSlug, httpSlug)
	if err != nil {
		return res, err
	}
	defer stop()
	sftpDir, err := os.MkdirTemp(o.dir, "sftp-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(sftpDir)
	start := func() (*server, error) {
		return startServer(ctx, o.binary, url, childEnv, true,
			"--sftp-addr", "127.0.0.1:0", "--sftp-dir", sftpDir, "--sftp-host-key", filepath.Join(sftpDir, "host_key"),
			"--max-upload-bytes", strconv.FormatInt(max(res.bytes+1<<20, 4<<30), 10))
	}
	srv, err := start()
	if err != nil {
		return res, err
	}
	sftpAcct, httpAcct := accountOf(sftpSlug), accountOf(httpSlug)
	sftpToken, err := createTokenAs(sftpAcct, srv.base)
	var httpToken string
	if err == nil {
		httpToken, err = createTokenAs(httpAcct, srv.base)
	}
	// A password log-in holds 64 MiB (argon2id) that Go gives back to the
	// system only slowly: a fresh serve measures the uploads alone.
	srv.stop()
	if err != nil {
		return res, err
	}
	if srv, err = start(); err != nil {
		return res, err
	}
	defer srv.stop()
	pid := srv.cmd.Process.Pid
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	res.startRSSKiB = rss(pid, "VmRSS:")

	viaSFTP := func() error {
		fmt.Fprintf(os.Stderr, "SFTP: %d customers, %.0f MB\n", res.records, float64(res.bytes)/1e6)
		// The transfer's baseline, just before it: the same file copied
		// to the same disk and synced, as the server does with what it
		// receives.
		copied, err := copySynced(csvPath, filepath.Join(o.dir, fmt.Sprintf("copy-%d", os.Getpid())))
		if err != nil {
			return err
		}
		res.localCopy = copied
		if err := resetPeakRSS(pid); err != nil {
			return err
		}
		begin := time.Now()
		if err := sftpPut(srv.sftpAddr, sftpSlug, sftpToken, csvPath, "customers-bench.csv"); err != nil {
			return err
		}
		res.sftpTransfer = time.Since(begin)
		res.sftpTransferRSSKiB = peakRSS(pid)
		w, err := waitImport(ctx, conn, begin, o.transferOnly, `SELECT r.id FROM import_runs r JOIN companies c ON c.id = r.company_id WHERE c.slug = $1 AND r.source = 'sftp'`, sftpSlug)
		if err != nil {
			return fmt.Errorf("sftp: %w", err)
		}
		res.sftpScheduled, res.sftpCompleted, res.sftpEndToEnd, res.sftpAccepted = w.scheduled, w.completed, w.projected, w.accepted
		res.sftpRSSKiB = peakRSS(pid)
		return nil
	}
	viaHTTP := func() error {
		fmt.Fprintf(os.Stderr, "HTTP: %d customers, %.0f MB\n", res.records, float64(res.bytes)/1e6)
		if err := resetPeakRSS(pid); err != nil {
			return err
		}
		begin := time.Now()
		runID, err := httpPut(httpAcct, srv.base, httpToken, csvPath)
		if err != nil {
			return err
		}
		w, err := waitImport(ctx, conn, begin, false, `SELECT $1::text`, runID)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		res.httpScheduled, res.httpCompleted, res.httpEndToEnd, res.httpAccepted = w.scheduled, w.completed, w.projected, w.accepted
		res.httpRSSKiB = peakRSS(pid)
		return nil
	}
	if o.transferOnly {
		res.transferOnly = true
		return res, viaSFTP()
	}
	// One after the other: the second imports into a database that holds
	// the first's customers, so the order is a flag.
	phases := []func() error{viaSFTP, viaHTTP}
	if o.httpFirst {
		phases[0], phases[1] = viaHTTP, viaSFTP
		res.httpFirst = true
	}
	for i, phase := range phases {
		if i > 0 {
			// The first import's other projectors may still be at work:
			// the second starts once serve is idle.
			if err := waitIdle(ctx, pid); err != nil {
				return res, err
			}
		}
		if err := phase(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// waitIdle waits until the process has used less than 5 % of a core for
// three seconds in a row (its utime and stime in /proc/<pid>/stat, in
// clock ticks of 10 ms), or 10 minutes.
func waitIdle(ctx context.Context, pid int) error {
	cpu := func() int64 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0
		}
		// Fields after the command's closing parenthesis; utime and stime
		// are the 14th and 15th of the line.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			return 0
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		return u + s
	}
	start := time.Now()
	last, quiet := cpu(), 0
	for quiet < 3 && time.Since(start) < 10*time.Minute {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		now := cpu()
		if now-last < 5 {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	fmt.Fprintf(os.Stderr, "serve idle after %.1fs\n", time.Since(start).Seconds())
	return nil
}

// copySynced copies the file at from to to, syncs it, removes it, and
// returns how long the copy and the sync took.
func copySynced(from, to string) (time.Duration, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	start := time.Now()
	out, err := os.Create(to)
	if err != nil {
		return 0, err
	}
	defer os.Remove(to)
	_, err = io.Copy(out, in)
	if err = errors.Join(err, out.Sync(), out.Close()); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// sftpPut sends the file at path as toclientele/name, logging in with
// the token, and returns once the server answered its close (the file
// is then queued for import).
func sftpPut(addr, user, token, path, name string) error {
	sc, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.Password(token)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), // a server this run started
		Timeout:         30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	defer sc.Close()
	// OpenSSH's sftp: 32 KiB writes, 64 in flight.
	c, err := sftp.NewClient(sc, sftp.UseConcurrentWrites(true), sftp.MaxPacket(32<<10), sftp.MaxConcurrentRequestsPerFile(64))
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	defer c.Close()
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := c.Create("toclientele/" + name)
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	if _, err := f.ReadFrom(in); err != nil {
		f.Close()
		return fmt.Errorf("sftp: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sftp: close: %w", err)
	}
	return nil
}

// httpPut posts the CSV file at path to POST /api/customers/upload/ and
// returns its run id, once answered (the run staged and scheduled).
func httpPut(acct account, base, token, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var v struct {
		RunID string `json:"run_id"`
	}
	err = doAs(acct, "POST", base+"/api/customers/upload/", token, f, "text/csv; charset=utf-8", &v)
	return v.RunID, err
}

// waited is when an import run reached each stage, from the start of its
// upload.
type waited struct {
	scheduled, completed, projected time.Duration
	accepted                        int
}

// waitImport polls, every 100 ms, the run that runQuery (with arg)
// names, until it is scheduled (and returns then with untilScheduled),
// then completed, then every accepted customer of its company is in the
// customers read model.
func waitImport(ctx context.Context, conn *pgx.Conn, start time.Time, untilScheduled bool, runQuery, arg string) (waited, error) {
	var w waited
	runID := ""
	for {
		if runID == "" {
			err := conn.QueryRow(ctx, runQuery, arg).Scan(&runID)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return w, err
			}
		}
		if runID != "" {
			var state, company string
			var accepted int
			if err := conn.QueryRow(ctx, `SELECT state, accepted, company_id FROM import_runs WHERE id = $1`, runID).Scan(&state, &accepted, &company); err != nil {
				return w, err
			}
			now := time.Since(start)
			if state == "failed" {
				return w, fmt.Errorf("import %s failed", runID)
			}
			if state != "receiving" && w.scheduled == 0 {
				w.scheduled = now
				if untilScheduled {
					return w, nil
				}
			}
			if state == "completed" {
				if w.completed == 0 {
					w.completed = now
				}
				var visible int
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM customers WHERE company_id = $1 AND NOT is_deleted`, company).Scan(&visible); err != nil {
					return w, err
				}
				if visible >= accepted {
					w.projected, w.accepted = time.Since(start), accepted
					return w, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its RSS now
// (Linux: proc(5), clear_refs), so that the next reading is the peak of
// what follows.
func resetPeakRSS(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// rss reads a size field (VmRSS:, VmHWM:) of /proc/<pid>/status, in KiB.
func rss(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kib, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib
		}
	}
	return 0
}

func (r sftpResult) print(w io.Writer) {
	mb := float64(r.bytes) / 1e6
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	fmt.Fprintf(w, "file:                     %d customers, %.1f MB of CSV\n", r.records, mb)
	if !r.transferOnly {
		order := "SFTP, then HTTP"
		if r.httpFirst {
			order = "HTTP, then SFTP"
		}
		fmt.Fprintf(w, "order:                    %s\n", order)
	}
	fmt.Fprintf(w, "server RSS before:        %.0f MB\n", float64(r.startRSSKiB)/1024)
	fmt.Fprintf(w, "SFTP transfer:            %.1f MB/s (%.1fs, open to close answered), peak RSS %.0f MB\n",
		mb/r.sftpTransfer.Seconds(), r.sftpTransfer.Seconds(), float64(r.sftpTransferRSSKiB)/1024)
	fmt.Fprintf(w, "SFTP until scheduled:     %.1f MB/s (%.1fs: transfer, queue, staging)\n", mb/r.sftpScheduled.Seconds(), r.sftpScheduled.Seconds())
	fmt.Fprintf(w, "local copy and fsync:     %.1f MB/s (%.1fs); SFTP transfer / local copy: %.2f\n",
		mb/r.localCopy.Seconds(), r.localCopy.Seconds(), r.localCopy.Seconds()/r.sftpTransfer.Seconds())
	if r.transferOnly {
		fmt.Fprintf(w, "peak RSS until scheduled: %.0f MB\n", float64(r.sftpRSSKiB)/1024)
		return
	}
	fmt.Fprintf(w, "HTTP until scheduled:     %.1f MB/s (%.1fs: upload answered, staged)\n", mb/r.httpScheduled.Seconds(), r.httpScheduled.Seconds())
	fmt.Fprintf(w, "SFTP end to end:          %.0f customers/s (%.1fs to completed, %.1fs to projected; %d accepted), peak RSS %.0f MB\n",
		rate(r.sftpAccepted, r.sftpEndToEnd), r.sftpCompleted.Seconds(), r.sftpEndToEnd.Seconds(), r.sftpAccepted, float64(r.sftpRSSKiB)/1024)
	fmt.Fprintf(w, "HTTP end to end:          %.0f customers/s (%.1fs to completed, %.1fs to projected; %d accepted), peak RSS %.0f MB\n",
		rate(r.httpAccepted, r.httpEndToEnd), r.httpCompleted.Seconds(), r.httpEndToEnd.Seconds(), r.httpAccepted, float64(r.httpRSSKiB)/1024)
	fmt.Fprintf(w, "SFTP / HTTP until scheduled: %.2f\n", r.httpScheduled.Seconds()/r.sftpScheduled.Seconds())
	fmt.Fprintf(w, "SFTP / HTTP end to end:      %.2f\n", rate(r.sftpAccepted, r.sftpEndToEnd)/rate(r.httpAccepted, r.httpEndToEnd))
}
