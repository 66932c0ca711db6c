package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// receiveBodyLimit bounds the body the receiver reads of one request (a
// batch of 100 messages fits many times over).
const receiveBodyLimit = 16 << 20

// receivePrintLimit bounds what it prints of one body.
const receivePrintLimit = 2048

// newReceiveCommand is a webhook receiver for trying outlets out: it
// prints every request it gets and, given the outlet's secret, checks its
// Standard Webhooks signature with the reference library.
func newReceiveCommand(g *globals) *cobra.Command {
	var addr, secret string
	cmd := &cobra.Command{
		Use:   "receive",
		Short: "Run a webhook receiver that prints what outlets send (for trying datatargets out)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var wh *standardwebhooks.Webhook
			if secret != "" {
				var err error
				if wh, err = standardwebhooks.NewWebhook(secret); err != nil {
					return fmt.Errorf("--secret: want the outlet's secret, whsec_ followed by base64")
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--addr: %w", err)
			}
			fmt.Fprintf(g.stdout, "Receiving webhooks on http://%s/ (Ctrl-C stops)\n", ln.Addr())
			return serveReceiver(cmd.Context(), ln, wh, g.stdout)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9000", "address to listen on")
	cmd.Flags().StringVar(&secret, "secret", "", "the outlet's signing secret (whsec_...), to check each request's signature")
	return cmd
}

// serveReceiver answers every request on ln with 204, printing it to out,
// until ctx ends.
func serveReceiver(ctx context.Context, ln net.Listener, wh *standardwebhooks.Webhook, out io.Writer) error {
	var mu sync.Mutex // one request printed at a time
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, receiveBodyLimit))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		signature := "not checked (no --secret)"
		if wh != nil {
			if err := wh.Verify(body, r.Header); err != nil {
				signature = "INVALID: " + err.Error()
			} else {
				signature = "valid"
			}
		}
		shown := body
		var compact bytes.Buffer
		if json.Compact(&compact, body) == nil {
			shown = compact.Bytes()
		}
		more := ""
		if len(shown) > receivePrintLimit {
			more = fmt.Sprintf(" ... (%d bytes in all)", len(shown))
			shown = shown[:receivePrintLimit]
		}
		mu.Lock()
		fmt.Fprintf(out, "%s %s %s webhook-id=%s signature %s\n  %s%s\n", time.Now().Format(time.TimeOnly), r.Method, r.URL.RequestURI(),
			r.Header.Get("webhook-id"), signature, shown, more)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}
