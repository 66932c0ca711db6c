package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The segments run (-entity segments, issue 28): -n customers and five
// events each, imported twice on fresh databases, once with no segment
// and once with scaleSegments active segments mixing field, event-window
// and sales leaves created first; how much slower the imports are with
// them, how far membership lags the log while they run, how fast a
// preview answers, and how fast one more segment's members are computed
// (its backfill) over the company.
//
//	go run ./cmd/clientele-load -entity segments -n 1000000

// scaleSegments are the rules of the active segments: a tenth of them
// field leaves alone, the rest event windows, sales and mixes.
var scaleSegments = []string{
	`{"field": "city", "eq": "Helsinki"}`,
	`{"field": "city", "in": ["Espoo", "Vantaa"]}`,
	`{"field": "can_email", "eq": true}`,
	`{"field": "tags", "contains": "segment-3"}`,
	`{"field": "date_joined", "within_days": 700}`,
	`{"event": {"type": "BROWSE", "within_days": 30}}`,
	`{"event": {"type": "BROWSE", "within_days": 7, "min_count": 2}}`,
	`{"event": {"type": "BASKET_ADD", "within_days": 14}}`,
	`{"event": {"type": "BROWSE", "within_days": 60, "where": [{"field": "path", "contains": "/products/p-1"}]}}`,
	`{"not": {"event": {"type": "ORDER_SHIPPED", "within_days": 90}}}`,
	`{"sales": {"within_days": 90, "min_revenue": 10000}}`,
	`{"sales": {"within_days": 365}}`,
	`{"all": [{"field": "city", "eq": "Turku"}, {"event": {"type": "BROWSE", "within_days": 30}}]}`,
	`{"all": [{"field": "can_sms", "eq": true}, {"event": {"type": "BASKET_ADD", "within_days": 30, "min_count": 2}}]}`,
	`{"any": [{"field": "city", "eq": "Oulu"}, {"sales": {"within_days": 30}}]}`,
	`{"all": [{"event": {"type": "BROWSE", "within_days": 30}}, {"not": {"event": {"type": "BASKET_ADD", "within_days": 30}}}]}`,
	`{"all": [{"field": "language", "eq": "fi"}, {"event": {"type": "SENTIMENT", "within_days": 90}}]}`,
	`{"any": [{"event": {"type": "BASKET_ADD", "within_days": 3}}, {"event": {"type": "BROWSE", "within_days": 3, "min_count": 3}}]}`,
	`{"all": [{"field": "city", "eq": "Tampere"}, {"not": {"field": "can_email", "eq": true}}]}`,
	`{"all": [{"field": "mailing_lists", "contains": "newsletter"}, {"event": {"type": "BROWSE", "within_days": 45, "min_count": 3}}]}`,
}

// previewRule is the preview's rule: three leaves, one an event window.
const previewRule = `{"all": [{"field": "city", "eq": "Helsinki"}, {"event": {"type": "BROWSE", "within_days": 30}}, {"not": {"field": "can_sms", "eq": true}}]}`

// backfillRule is the rule of the segment created once the data is in.
// (A customer's two BROWSE events are 22 or 30 days apart in scaleEvent:
// "two within 14 days" held for no one.)
const backfillRule = `{"all": [{"field": "city", "in": ["Helsinki", "Espoo"]}, {"event": {"type": "BROWSE", "within_days": 30}}]}`

// eventsPerCustomer is the number of events the segments run imports for
// each customer.
const eventsPerCustomer = 5

// scaleNow is the instant the events are dated back from.
var scaleNow = time.Now().UTC().Truncate(time.Minute)

// scaleEvent is event i of the segments run, for customer i % customers,
// dated within the last 100 days; a customer's events are of every type
// in turn (the k-th of customer c is type (c+k) % 5).
func scaleEvent(customers int) generator {
	return func(i int) []byte {
		c := i % customers
		at := scaleNow.Add(-time.Duration((i*7919)%(100*24*60)) * time.Minute).Format(time.RFC3339)
		switch (c + i/customers) % 5 {
		case 0, 1:
			return fmt.Appendf(nil, `{"type":"BROWSE","date":%q,"customer_id":"c-%d","product_id":"p-%d","path":"/products/p-%d"}`,
				at, c, i%products, i%products)
		case 2:
			return fmt.Appendf(nil, `{"type":"BASKET_ADD","date":%q,"customer_id":"c-%d","product_id":"p-%d","price":%d}`,
				at, c, i%products, 100+i%products*10)
		case 3:
			return fmt.Appendf(nil, `{"type":"SENTIMENT","date":%q,"customer_id":"c-%d","sentiment_value":%d}`, at, c, i%11)
		}
		return fmt.Appendf(nil, `{"type":"ORDER_SHIPPED","date":%q,"customer_id":"c-%d","tracking_number":"TRK%09d"}`, at, c, i)
	}
}

// segmentRound is one import of the segments run.
type segmentRound struct {
	segments            int
	customers, events   time.Duration // end to end, each
	nCustomers, nEvents int
	// lags are the membership's lag behind the log, sampled every 500 ms
	// from the first upload until it reached the head after the last.
	lags     []time.Duration
	catchUp  time.Duration // from all retrievable until membership at the head
	peakRSS  int64         // KiB
	previews []time.Duration
	// previewsFailed are the previews answered 503 (over their bound).
	previewsFailed int
	backfill       time.Duration
	size           int
}

type segmentScaleResult struct{ without, with segmentRound }

func runSegmentScale(ctx context.Context, o options) (segmentScaleResult, error) {
	var res segmentScaleResult
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return res, err
	}
	var err error
	if res.without, err = segmentRoundOf(ctx, o, 0); err != nil {
		return res, err
	}
	res.with, err = segmentRoundOf(ctx, o, len(scaleSegments))
	return res, err
}

// segmentRoundOf imports the run's customers and events on a fresh
// database with the first segments of scaleSegments active, and, with
// any, times the previews and one more segment's backfill.
func segmentRoundOf(ctx context.Context, o options, segments int) (segmentRound, error) {
	r := segmentRound{segments: segments, nCustomers: o.n, nEvents: o.n * eventsPerCustomer}
	d, err := deploy(ctx, o, "segments")
	if err != nil {
		return r, err
	}
	defer d.close()
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	for k, rule := range scaleSegments[:segments] {
		if err := createSegment(d.srv.base, d.token, fmt.Sprintf("scale-%02d", k), rule); err != nil {
			return r, err
		}
	}
	lagCtx, stopLag := context.WithCancel(ctx)
	var lagWG sync.WaitGroup
	if segments > 0 {
		lagConn, err := pgx.Connect(ctx, d.url)
		if err != nil {
			stopLag()
			return r, err
		}
		lagWG.Add(1)
		go func() {
			defer lagWG.Done()
			defer lagConn.Close(context.Background())
			r.lags = sampleLag(lagCtx, lagConn)
		}()
	}
	defer stopLag()
	for _, step := range []struct {
		entity string
		gen    generator
		n      int
		took   *time.Duration
	}{
		{"customers", customer, r.nCustomers, &r.customers},
		{"events", scaleEvent(o.n), r.nEvents, &r.events},
	} {
		fmt.Fprintf(os.Stderr, "segments %d: importing %d %s\n", segments, step.n, step.entity)
		start := time.Now()
		var runs []string
		for first := 0; first < step.n; first += o.perUpload {
			id, _, err := upload(d.srv.base, d.token, step.entity, step.gen, first, min(o.perUpload, step.n-first))
			if err != nil {
				return r, err
			}
			runs = append(runs, id)
		}
		if _, _, _, err := waitRetrievable(ctx, conn, d.srv.base, d.token, step.entity, runs); err != nil {
			return r, err
		}
		*step.took = time.Since(start)
	}
	if segments == 0 {
		r.peakRSS = peakRSS(d.srv.cmd.Process.Pid)
		return r, nil
	}
	retrievable := time.Now()
	if _, err := measureSegments(ctx, conn); err != nil {
		return r, err
	}
	r.catchUp = time.Since(retrievable)
	stopLag()
	lagWG.Wait()

	fmt.Fprintf(os.Stderr, "segments %d: previews\n", segments)
	for range 20 {
		start := time.Now()
		var preview struct{}
		if err := do("POST", d.srv.base+"/api/segments/preview/", d.token,
			strings.NewReader(`{"rule": `+previewRule+`}`), "application/json", &preview); err != nil {
			// A preview over its time bound is answered 503: counted
			// as failed, at the time it took.
			fmt.Fprintf(os.Stderr, "segments %d: preview: %v\n", segments, err)
			r.previewsFailed++
		}
		r.previews = append(r.previews, time.Since(start))
	}
	fmt.Fprintf(os.Stderr, "segments %d: one more segment\n", segments)
	start := time.Now()
	if err := createSegment(d.srv.base, d.token, "scale-new", backfillRule); err != nil {
		return r, err
	}
	// The creation's commit applied (its backfill with it): the
	// membership projection at the head of the log as it was then.
	if _, err := measureSegments(ctx, conn); err != nil {
		return r, err
	}
	r.backfill = time.Since(start)
	if r.size, err = segmentSize(d.srv.base, d.token, "scale-new"); err != nil {
		return r, err
	}
	r.peakRSS = peakRSS(d.srv.cmd.Process.Pid)
	return r, nil
}

func createSegment(base, token, key, rule string) error {
	body := fmt.Sprintf(`{"segment_key": %q, "name": %q, "rule": %s}`, key, key, rule)
	var created struct{}
	return do("POST", base+"/api/segments/", token, strings.NewReader(body), "application/json", &created)
}

// segmentSize is the segment's members now.
func segmentSize(base, token, key string) (int, error) {
	var v struct {
		Segment struct {
			Size int `json:"size"`
		} `json:"segment"`
	}
	err := do("GET", base+"/api/segments/"+key+"/", token, nil, "", &v)
	return v.Segment.Size, err
}

// sampleLag samples, every 500 ms until ctx ends, how long ago the
// oldest commit the membership projection has not applied was committed
// (0 when it is at the head of what is visible). The checkpoint is read
// first and the log from it by its primary key: with the checkpoint
// joined in the same statement PostgreSQL scanned the log from its start
// to the checkpoint (5 s at 300,000 events, a core kept busy by the
// sampler alone).
func sampleLag(ctx context.Context, conn *pgx.Conn) []time.Duration {
	var lags []time.Duration
	for sleep(ctx, 500*time.Millisecond) == nil {
		var txID string
		var global int64
		var secs float64
		err := conn.QueryRow(ctx, `SELECT transaction_id::text, global_position FROM projection_checkpoints
			WHERE name = 'segment_members'`).Scan(&txID, &global)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT coalesce((SELECT extract(epoch FROM clock_timestamp() - recorded_at) FROM events
				WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
				AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
				ORDER BY transaction_id, global_position LIMIT 1), 0)`, txID, global).Scan(&secs)
		}
		if err != nil {
			return lags // the run ended while asking
		}
		lags = append(lags, time.Duration(secs*float64(time.Second)))
	}
	return lags
}

func (r segmentScaleResult) print(w io.Writer) {
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	drop := func(with, without float64) float64 { return 100 * (1 - with/without) }
	for _, rd := range []segmentRound{r.without, r.with} {
		fmt.Fprintf(w, "%2d segments:         customers %.0f/s (%.1fs), events %.0f/s (%.1fs), peak RSS %d MB\n", rd.segments,
			rate(rd.nCustomers, rd.customers), rd.customers.Seconds(), rate(rd.nEvents, rd.events), rd.events.Seconds(), rd.peakRSS/1024)
	}
	cw, cwo := rate(r.with.nCustomers, r.with.customers), rate(r.without.nCustomers, r.without.customers)
	ew, ewo := rate(r.with.nEvents, r.with.events), rate(r.without.nEvents, r.without.events)
	fmt.Fprintf(w, "import drop:         customers %.1f %%, events %.1f %% (allowed 15 %%)\n", drop(cw, cwo), drop(ew, ewo))
	lags, previews := slices.Clone(r.with.lags), slices.Clone(r.with.previews)
	slices.Sort(lags)
	slices.Sort(previews)
	fmt.Fprintf(w, "membership lag:      p50 %.1fs, p95 %.1fs, max %.1fs over %d samples; at the head %.1fs after all was retrievable\n",
		percentile(lags, 0.5).Seconds(), percentile(lags, 0.95).Seconds(), percentile(lags, 1).Seconds(), len(lags), r.with.catchUp.Seconds())
	fmt.Fprintf(w, "preview (3 leaves):  p50 %.0f ms, p95 %.0f ms over %d, %d answered 503 (over the preview's bound)\n",
		ms(percentile(previews, 0.5)), ms(percentile(previews, 0.95)), len(previews), r.with.previewsFailed)
	fmt.Fprintf(w, "one more segment:    %d members in %.1fs, %.0f customers/s\n", r.with.size, r.with.backfill.Seconds(), rate(r.with.nCustomers, r.with.backfill))
}
