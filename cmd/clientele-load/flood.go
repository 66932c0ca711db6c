package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The flood benchmark (-flood): one company's token sends oversized
// refused requests without pause, floodSenders at once, each a body of
// floodBytes of unknown campaign fields (POST /api/campaigns/, which the
// token's role lets it parse), while another company's small requests
// (GET /api/campaigns/) are timed one after another; before the flood
// the same small requests are timed alone. It reports the server's peak
// RSS during the flood and the other company's p50 and p99.
//
//	go run ./cmd/clientele-load -flood -flood-senders 8 -flood-bytes 10000000 -flood-for 30s

// floodResult holds the figures of a flood run.
type floodResult struct {
	senders, bodyBytes int
	duration           time.Duration
	floods             int64
	floodStatus        map[int]int64
	answerBytes        int64
	peakRSSKiB         int64
	alone, during      []time.Duration
}

func (r floodResult) print(w io.Writer) {
	fmt.Fprintf(w, "flood:               %d senders, %.0f MB bodies of unknown fields, %.0fs\n", r.senders, float64(r.bodyBytes)/1e6, r.duration.Seconds())
	fmt.Fprintf(w, "flood requests:      %d answered (%v), %.0f requests/s, %d bytes a refusal\n",
		r.floods, r.floodStatus, float64(r.floods)/r.duration.Seconds(), r.answerBytes/max(1, r.floods))
	fmt.Fprintf(w, "server peak RSS:     %.0f MB\n", float64(r.peakRSSKiB)/1024)
	for _, s := range []struct {
		name string
		d    []time.Duration
	}{{"other company alone", r.alone}, {"other, during flood", r.during}} {
		fmt.Fprintf(w, "%-20s %d requests: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", s.name+":", len(s.d),
			ms(percentile(s.d, 0.50)), ms(percentile(s.d, 0.99)), ms(s.d[len(s.d)-1]))
	}
}

func runFlood(ctx context.Context, o options) (floodResult, error) {
	res := floodResult{senders: o.floodSenders, bodyBytes: o.floodBytes, duration: o.floodFor, floodStatus: map[int]int64{}}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return res, err
	}
	const other = "other"
	url, env, dropDB, err := prepare(ctx, o, "flood", nil, slug, other)
	if err != nil {
		return res, err
	}
	defer dropDB()
	srv, err := startServer(ctx, o.binary, url, env, false)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	token, err := createToken(srv.base)
	if err != nil {
		return res, err
	}
	otherToken, err := createTokenAs(accountOf(other), srv.base)
	if err != nil {
		return res, err
	}

	// The body: {"f0": 1, "f1": 1, ...} up to floodBytes.
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; b.Len() < o.floodBytes-20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"f` + strconv.Itoa(i) + `":1`)
	}
	b.WriteByte('}')
	body := b.Bytes()

	small := func() (time.Duration, error) {
		req, err := http.NewRequest(http.MethodGet, srv.base+"/api/campaigns/?limit=10", nil)
		if err != nil {
			return 0, err
		}
		req.Host = accountOf(other).host
		req.Header.Set("Authorization", "Bearer "+otherToken)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET /api/campaigns/ of %s: %d", other, resp.StatusCode)
		}
		return took, nil
	}
	for range 500 {
		d, err := small()
		if err != nil {
			return res, err
		}
		res.alone = append(res.alone, d)
	}

	pid := srv.cmd.Process.Pid
	if err := resetPeakRSS(pid); err != nil {
		return res, err
	}
	floodCtx, stop := context.WithTimeout(ctx, o.floodFor)
	defer stop()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		floods   atomic.Int64
		answered atomic.Int64
		floodErr error
	)
	for range o.floodSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for floodCtx.Err() == nil {
				req, err := http.NewRequestWithContext(floodCtx, http.MethodPost, srv.base+"/api/campaigns/", bytes.NewReader(body))
				if err != nil {
					return
				}
				req.Host = host
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					if floodCtx.Err() == nil {
						mu.Lock()
						floodErr = err
						mu.Unlock()
					}
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				floods.Add(1)
				answered.Add(n)
				mu.Lock()
				res.floodStatus[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	for floodCtx.Err() == nil {
		d, err := small()
		if err != nil {
			return res, err
		}
		res.during = append(res.during, d)
	}
	wg.Wait()
	if floodErr != nil {
		return res, floodErr
	}
	res.floods, res.answerBytes = floods.Load(), answered.Load()
	res.peakRSSKiB = peakRSS(pid)
	slices.Sort(res.alone)
	slices.Sort(res.during)
	return res, nil
}
