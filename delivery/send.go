package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/clientele/clientele/domain/datatarget"
)

// maxReplyRead is how much of a reply body is read (and discarded beyond
// what the log keeps) so that the connection can be reused; the
// connection of a longer reply is closed instead.
const maxReplyRead = 1 << 20

// userAgent is sent unless the outlet configures its own.
const userAgent = "Clientele-Webhooks/1.0"

// sender makes the attempts of one outlet's worker.
type sender struct {
	cfg    Config
	client *http.Client
	rec    *recorder
	outlet datatarget.Outlet
	tmpl   datatarget.Template
	key    []byte // signing key, nil when the outlet has no secret
	rewind rewind // the outlet's last rewind
	body   bytes.Buffer
}

// result is the outcome of one attempt.
type result struct {
	entry datatarget.LogEntry
	// retryAfter is the receiver's Retry-After, when it sent one.
	retryAfter *time.Duration
	// gone is true when the receiver answered 410 Gone.
	gone bool
}

// send makes one attempt to deliver batch, dated date.
func (s *sender) send(ctx context.Context, batch []message, date time.Time, batchNumber int64) result {
	var data bytes.Buffer
	msgs := make([]json.RawMessage, len(batch))
	for i, m := range batch {
		msgs[i] = m.body
	}
	datatarget.BatchData(&data, s.outlet.IsBatched, msgs)
	s.body.Reset()
	s.tmpl.Render(&s.body, data.Bytes())
	body := s.body.Bytes()
	first := batch[0].number
	res := result{entry: datatarget.LogEntry{
		Date: date, BatchNumber: batchNumber, BatchSize: len(batch), FirstMessageNumber: first, AfterUpdate: batch[0].afterUpdate,
		Status: datatarget.StatusFail,
	}}

	if reason := datatarget.URLProblem(s.outlet.Request.URL); reason != "" {
		// An outlet created before its URL was refused (a space in it):
		// sent as it is, it would reach the receiver as a broken request.
		res.entry.FailReason = "not sent: the outlet's URL " + reason
		return res
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	req, err := s.request(rctx, body, fmt.Sprintf("msg_%s_%d_%d", s.outlet.ID, first, len(batch)), date)
	if err != nil {
		res.entry.FailReason = "cannot make the request: " + datatarget.MaskText(err.Error())
		return res
	}
	s.rec.start()
	start := time.Now()
	resp, err := s.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReplyRead))
		resp.Body.Close()
	}
	res.entry.RequestTimeMS = time.Since(start).Milliseconds()
	rawReq, rawReply, reqTotal, _ := s.rec.stop()
	if reqTotal == 0 && ctx.Err() == nil {
		// Nothing reached the wire (no connection): log the request as it
		// would have been sent.
		if dump, derr := s.dump(body, req); derr == nil {
			rawReq, reqTotal = dump, len(dump)
		}
	}
	if reqTotal > 0 && reqTotal <= s.cfg.MaxRequestLog {
		res.entry.HTTPRequestAvailable = true
		// Stored with the header values masked: they are the outlet's
		// credentials, sealed at rest and shown to no one.
		res.entry.HTTPRequest = datatarget.MaskRawHeaders(text(rawReq), s.outlet.Request.Headers)
	}
	res.entry.HTTPReply = text(rawReply)
	if resp != nil {
		res.entry.HTTPStatus = resp.StatusCode
	}
	switch {
	case resp == nil || err != nil:
		res.entry.FailReason = failReason(err, rctx.Err(), s.cfg.RequestTimeout, s.outlet.Request.URL)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		res.entry.Status = datatarget.StatusOK
	default:
		res.entry.FailReason = "the receiver answered " + resp.Status
		if resp.StatusCode == http.StatusGone {
			res.gone = true
			res.entry.FailReason += "; the outlet is disabled"
		}
		if d, ok := retryAfter(resp.Header, s.cfg.Now()); ok {
			res.retryAfter = &d
			res.entry.FailReason += fmt.Sprintf("; Retry-After %s", resp.Header.Get("Retry-After"))
		}
	}
	return res
}

// request builds the HTTP request of an attempt: the configured method,
// URL and headers, Content-Type application/json unless configured, and
// the Standard Webhooks headers when the outlet has a secret.
func (s *sender) request(ctx context.Context, body []byte, id string, date time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, s.outlet.Request.Method, s.outlet.Request.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range s.outlet.Request.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	if s.key != nil {
		sign(req.Header, s.key, id, date, body)
	}
	return req, nil
}

// dump renders req as Go would write it, for an attempt that never
// reached the wire.
func (s *sender) dump(body []byte, req *http.Request) ([]byte, error) {
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	return httputil.DumpRequestOut(r, true)
}

// failReason explains a request to target that got no complete reply.
// It is made of the error's parts, never of its text: Go's *url.Error
// prints the URL as requested, credentials in its query included, and the
// reason is shown to whoever reads the outlet's log. The URL is named
// masked (datatarget.MaskURL), and whatever else the error says too
// (datatarget.MaskText), in case it quotes the URL again.
func failReason(err, rctx error, timeout time.Duration, target string) string {
	var refused *RefusedAddressError
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.As(err, &refused):
		return refused.Error()
	case errors.Is(rctx, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("timeout: no complete reply within %v", timeout)
	case errors.As(err, &urlErr):
		return fmt.Sprintf("no reply: %s %q: %s", urlErr.Op, datatarget.MaskURL(target), datatarget.MaskText(urlErr.Err.Error()))
	case err != nil:
		return "no reply: " + datatarget.MaskText(err.Error())
	}
	return "no reply"
}

// text makes raw bytes storable as PostgreSQL text: valid UTF-8 without
// NUL characters.
func text(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
