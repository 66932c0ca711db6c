package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/console"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/projections/segments"
)

type serveFlags struct {
	addr         string
	baseDomain   string
	rateLimit    float64
	rateBurst    int
	maxBodyBytes int64
	demo         bool
	// demoData loads the demo data set into the demo company (demo_data.go).
	demoData bool
	// maxUploadBytes replaces maxBodyBytes for uploads.
	maxUploadBytes int64
	// webhookAllowCIDRs lists networks webhook outlets may reach although
	// they are private, loopback, link-local, ...
	webhookAllowCIDRs string
	// debugAddr, when set, serves Go's profiler (net/http/pprof) there.
	debugAddr string
	// trustedProxies lists the reverse proxies whose X-Forwarded-For is
	// believed for the client address.
	trustedProxies string
	// passwordChecks bounds the password checks (64 MiB each) at once.
	passwordChecks int
	// sftp configures the SFTP drop directory (sftp.go).
	sftp sftpFlags
	// retention says how long the outlet log's raw texts and delivered
	// messages are kept (delivery.Retention).
	retention delivery.Retention
}

func newServeCommand(g *globals) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API and run the projections",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkEventStore(g.eventStore); err != nil {
				return err
			}
			return g.withApp(cmd, func(ctx context.Context, a *app) error { return serve(ctx, g, a, f) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", envOr(g.getenv, "CLIENTELE_ADDR", "127.0.0.1:8080"), "listen address (env CLIENTELE_ADDR)")
	fl.StringVar(&f.baseDomain, "base-domain", envOr(g.getenv, "CLIENTELE_BASE_DOMAIN", "localhost"), "companies are served at <slug>.<base-domain> (env CLIENTELE_BASE_DOMAIN)")
	fl.Float64Var(&f.rateLimit, "rate-limit", envFloat(g.getenv, "CLIENTELE_RATE_LIMIT", 50), "requests per second per token (env CLIENTELE_RATE_LIMIT)")
	fl.IntVar(&f.rateBurst, "rate-burst", int(envFloat(g.getenv, "CLIENTELE_RATE_BURST", 200)), "burst of requests per token (env CLIENTELE_RATE_BURST)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", int64(envFloat(g.getenv, "CLIENTELE_MAX_BODY_BYTES", 32<<20)), "largest accepted request body (env CLIENTELE_MAX_BODY_BYTES)")
	fl.StringVar(&f.webhookAllowCIDRs, "webhook-allow-cidrs", g.getenv("CLIENTELE_WEBHOOK_ALLOW_CIDRS"), "comma-separated networks (e.g. 127.0.0.0/8,10.1.0.0/16) that webhook outlets may reach although they are private, loopback or link-local (env CLIENTELE_WEBHOOK_ALLOW_CIDRS)")
	fl.Int64Var(&f.maxUploadBytes, "max-upload-bytes", int64(envFloat(g.getenv, "CLIENTELE_MAX_UPLOAD_BYTES", api.DefaultMaxUploadBytes)), "largest accepted upload (POST /api/<entity>/upload/), which is streamed, never held in memory (env CLIENTELE_MAX_UPLOAD_BYTES)")
	fl.StringVar(&f.debugAddr, "debug-addr", g.getenv("CLIENTELE_DEBUG_ADDR"), "serve Go's profiler (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; off when empty; never expose it (env CLIENTELE_DEBUG_ADDR)")
	fl.StringVar(&f.trustedProxies, "trusted-proxies", g.getenv("CLIENTELE_TRUSTED_PROXIES"), "comma-separated addresses or networks of reverse proxies whose X-Forwarded-For header gives the client address (access log, failed log-ins per address); none when empty (env CLIENTELE_TRUSTED_PROXIES)")
	fl.IntVar(&f.passwordChecks, "password-checks", int(envFloat(g.getenv, "CLIENTELE_PASSWORD_CHECKS", 0)), "password checks (argon2id, 64 MiB each) that may run at once; 0 is half the processors, at least 1 (env CLIENTELE_PASSWORD_CHECKS)")
	fl.StringVar(&f.sftp.addr, "sftp-addr", g.getenv("CLIENTELE_SFTP_ADDR"), "serve the SFTP drop directory (docs/sftp.md) on this address, e.g. 127.0.0.1:2222; off when empty (env CLIENTELE_SFTP_ADDR)")
	fl.StringVar(&f.sftp.hostKey, "sftp-host-key", g.getenv("CLIENTELE_SFTP_HOST_KEY"), "SFTP host key file (OpenSSH format); default <data-dir>/sftp_host_ed25519_key, created on first start (env CLIENTELE_SFTP_HOST_KEY)")
	fl.StringVar(&f.sftp.dir, "sftp-dir", g.getenv("CLIENTELE_SFTP_DIR"), "directory of the SFTP drop directory's files and import queue; default <data-dir>/sftp (env CLIENTELE_SFTP_DIR)")
	fl.DurationVar(&f.retention.OKTexts, "outlet-log-retention", envDuration(g.getenv, "CLIENTELE_OUTLET_LOG_RETENTION", delivery.DefaultOKTextRetention), "how long the raw request and reply of a successful webhook attempt are kept (env CLIENTELE_OUTLET_LOG_RETENTION)")
	fl.DurationVar(&f.retention.FailedTexts, "outlet-log-failed-retention", envDuration(g.getenv, "CLIENTELE_OUTLET_LOG_FAILED_RETENTION", delivery.DefaultFailedTextRetention), "how long the raw request and reply of a failed webhook attempt are kept (env CLIENTELE_OUTLET_LOG_FAILED_RETENTION)")
	fl.DurationVar(&f.retention.Messages, "datatarget-message-retention", envDuration(g.getenv, "CLIENTELE_DATATARGET_MESSAGE_RETENTION", 0), "how long a datatarget without message_retention_days keeps a message once every outlet delivered it; 0 keeps it for ever (env CLIENTELE_DATATARGET_MESSAGE_RETENTION)")
	fl.BoolVar(&f.demo, "demo", false, "create a demo company and admin user on first start and print how to log in")
	fl.BoolVar(&f.demoData, "demo-data", false, "with --demo, load a month of a small shop's customers, products, events, sales, a campaign and datatargets into the demo company while it has no customers")
	return cmd
}

func envFloat(getenv func(string) string, key string, def float64) float64 {
	if v, err := strconv.ParseFloat(getenv(key), 64); err == nil {
		return v
	}
	return def
}

func serve(ctx context.Context, g *globals, a *app, f serveFlags) error {
	var demo *demoLogin
	if f.demo {
		var err error
		if demo, err = ensureDemo(ctx, g, a); err != nil {
			return fmt.Errorf("demo set-up: %w", err)
		}
	}
	var demoData *demoDataLoad
	if f.demoData {
		if demo == nil {
			return errors.New("--demo-data loads the demo company: give --demo too")
		}
		var err error
		if demoData, err = loadDemoData(ctx, a, demo.companyID, time.Now()); err != nil {
			return fmt.Errorf("demo data: %w", err)
		}
	}

	allow, err := parseCIDRs(f.webhookAllowCIDRs)
	if err != nil {
		return fmt.Errorf("--webhook-allow-cidrs: %w", err)
	}
	application := a.application(f.baseDomain)
	handler, err := api.NewServer(api.Config{
		BaseDomain:        f.baseDomain,
		MaxBodyBytes:      f.maxBodyBytes,
		MaxUploadBytes:    f.maxUploadBytes,
		RateLimit:         f.rateLimit,
		RateBurst:         f.rateBurst,
		Logger:            a.log,
		Registerer:        a.metrics,
		Gatherer:          a.metrics,
		TrustedProxies:    splitList(f.trustedProxies),
		PasswordChecks:    f.passwordChecks,
		SegmentMembersOff: !g.segmentMembers,
		RefusedOutletURL: func(ctx context.Context, rawURL string) string {
			return delivery.RefusedURL(ctx, allow, rawURL)
		},
	}, application)
	if err != nil {
		return err
	}
	// The console shares the API's engine and application.
	if _, err := console.Mount(handler, console.Config{Logger: a.log}, application); err != nil {
		return err
	}

	deliverer, err := delivery.New(delivery.Config{
		Pool: a.pool, Keys: a.keys, Disable: a.commands.DisableOutlet.BySystem, AllowCIDRs: allow, Logger: a.log, Registerer: a.metrics,
		Retention: f.retention,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	srv := handler.HTTPServer()
	sftpSrv, err := startSFTP(g, a, f.sftp, f.maxUploadBytes, application, handler.LogIns())
	if err != nil {
		ln.Close()
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := a.runtime.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			errs <- fmt.Errorf("projections: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := deliverer.Run(runCtx); err != nil {
			errs <- fmt.Errorf("webhook delivery: %w", err)
		}
	}()
	if a.importWorker != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.importWorker.Run(runCtx); err != nil {
				errs <- fmt.Errorf("import worker: %w", err)
			}
		}()
	}
	if demoData != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			demoData.await(runCtx, a)
		}()
	}
	// Segment members leave (or enter) when a window passes, with no new
	// data: the timers the membership projection sets fire here.
	if g.segmentMembers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			segments.NewMembers(a.keys, a.eventLog()).RunTimers(runCtx, a.pool, segments.TimerInterval, time.Now, func(err error) {
				a.log.Error("segment timers", "error", err)
			})
		}()
	}
	// Every customer has a tracking token: those from before tokens get
	// theirs in the background (a no-op once done).
	wg.Add(1)
	go func() {
		defer wg.Done()
		issueCustomerTokens(runCtx, a)
	}()
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("http: %w", err)
		}
	}()
	if sftpSrv != nil {
		defer sftpSrv.srv.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sftpSrv.run(runCtx); err != nil {
				errs <- fmt.Errorf("sftp: %w", err)
			}
		}()
	}
	debugAddr := ""
	if f.debugAddr != "" {
		dbg, addr, err := debugServer(f.debugAddr)
		if err != nil {
			return err
		}
		defer dbg.Close()
		debugAddr = addr
		a.log.Info("profiler listening", "addr", debugAddr)
	}
	printWelcome(g, ln.Addr().String(), f.baseDomain, demo, sftpSrv, debugAddr, allow)
	a.log.Info("serving", "addr", ln.Addr().String(), "base_domain", f.baseDomain)
	if sftpSrv != nil {
		a.log.Info("serving sftp", "addr", sftpSrv.ln.Addr().String(), "host_key", sftpSrv.srv.Fingerprint())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
	}
	a.log.Info("shutting down")
	shutdownCtx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		a.log.Error("http shutdown", "err", err)
	}
	cancel()
	wg.Wait()
	return runErr
}

// printWelcome prints where to reach the server, in one write: whoever
// watches the output for the address then has the login too (and the
// profiler's address, when --debug-addr asked for one, port 0 included).
func printWelcome(g *globals, addr, baseDomain string, demo *demoLogin, sftpSrv *sftpServer, debugAddr string, allow []netip.Prefix) {
	_, port, _ := net.SplitHostPort(addr)
	var b strings.Builder
	fmt.Fprintf(&b, "Clientele is listening on http://%s\n", addr)
	if demo == nil {
		fmt.Fprintf(&b, "Companies are served at http://<slug>.%s:%s/ (console at /console/)\n", baseDomain, port)
	} else {
		base := fmt.Sprintf("http://%s.%s:%s", demo.slug, baseDomain, port)
		fmt.Fprintf(&b, "Demo company %q: %s/\n", demo.slug, base)
		fmt.Fprintf(&b, "Console: %s/console/\n", base)
		fmt.Fprintf(&b, "Log in as %s with password %s\n", demo.email, demo.password)
		fmt.Fprintf(&b, "Get an access token:\n  curl -u '%s:%s' -X POST %s/api/access-tokens/\n", demo.email, demo.password, base)
		fmt.Fprintf(&b, "API reference: %s/api/openapi.yaml\n", base)
	}
	slug := ""
	if demo != nil {
		slug = demo.slug
	}
	b.WriteString(sftpSrv.welcome(slug))
	if len(allow) == 0 {
		b.WriteString("Webhook outlets may reach public addresses only; to reach a receiver on this machine, start with\n" +
			"  --webhook-allow-cidrs 127.0.0.0/8 (make run ARGS='--webhook-allow-cidrs 127.0.0.0/8')\n")
	} else {
		fmt.Fprintf(&b, "Webhook outlets may reach public addresses and %s\n", joinPrefixes(allow))
	}
	if debugAddr != "" {
		fmt.Fprintf(&b, "Go's profiler on http://%s/debug/pprof/ (keep it private)\n", debugAddr)
	}
	io.WriteString(g.stdout, b.String())
}

// joinPrefixes writes networks as a comma-separated list.
func joinPrefixes(ps []netip.Prefix) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, ", ")
}

// splitList reads a comma-separated list, nil when it is empty.
func splitList(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseCIDRs reads a comma-separated list of networks.
func parseCIDRs(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// debugServer serves net/http/pprof's handlers on addr, apart from the
// API: an operator's tool to see where the time goes, reached only by
// whoever can reach addr. It returns the address it listens on.
func debugServer(addr string) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	return srv, ln.Addr().String(), nil
}
