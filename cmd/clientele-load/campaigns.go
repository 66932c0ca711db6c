package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The campaigns run (-entity campaigns) measures the campaign statistics
// (docs/campaigns.md, Statistics): with o.customers customers imported
// first (not timed), it creates o.campaigns active campaigns, uploads
// o.n campaign activity events and o.saleRows sale rows through the API,
// and reports the statistics projection's apply rate, the time from the
// last upload's end to fresh figures, and the latency of
// GET /api/campaign/actions/?limit=30 and of one campaign by keys.

// campaignKey names campaign k of the run.
func campaignKey(k int) string { return fmt.Sprintf("bench-%03d", k) }

// campaignActivation is when campaign k was activated: one every three
// days of 2025, so that the windows cover the generated sales.
func campaignActivation(k int) time.Time {
	return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 3*k)
}

// campaignEvent is campaign activity event i: groups of five events (a
// send, a delivery, then opens, clicks, a bounce or an unsubscribe) of
// one customer and one campaign, spread over every customer and
// campaign.
func campaignEvent(customers, campaigns int) generator {
	return func(i int) []byte {
		g, j := i/5, i%5
		c := g % customers
		k := (g/customers + g) % campaigns
		at := campaignActivation(k).Add(time.Duration(1+j+g%48) * time.Hour)
		typ := [...]string{"MAIL_SENT", "MAIL_DELIVERED", "MAIL_OPEN", "MAIL_CLICK", "MAIL_CLICK"}[j]
		switch {
		case j == 1 && g%10 == 0:
			typ = "MAIL_BOUNCE"
		case j == 4 && g%50 == 0:
			typ = "MAIL_UNSUBSCRIBE"
		case j >= 2 && g%3 == 0:
			typ = "MAIL_DELIVERED"
		}
		return fmt.Appendf(nil, `{"type":%q,"date":%q,"customer_id":"c-%d","campaign_key":%q}`,
			typ, at.Format(time.RFC3339), c, campaignKey(k))
	}
}

func runCampaigns(ctx context.Context, o options, base, token, url string, env []string, conn *pgx.Conn) (campaignResult, error) {
	res := campaignResult{customers: o.customers, campaigns: o.campaigns, events: o.n, saleRows: o.saleRows}
	if err := importUntimed(ctx, base, token, "customers", o.customers, o.perUpload); err != nil {
		return res, err
	}
	for k := range o.campaigns {
		body, _ := json.Marshal(map[string]any{"campaign_key": campaignKey(k), "kind": "email", "name": campaignKey(k),
			"state": "active", "activated_at": campaignActivation(k).Format(time.RFC3339),
			"product_ids": []string{fmt.Sprintf("p-%d", k), fmt.Sprintf("p-%d", k+100)}})
		var v any
		if err := do("POST", base+"/api/campaigns/", token, bytes.NewReader(body), "application/json", &v); err != nil {
			return res, err
		}
	}

	start := time.Now()
	var runs []string
	gens := []struct {
		entity string
		gen    generator
		n      int
	}{{"events", campaignEvent(o.customers, o.campaigns), o.n}, {"sales", saleRow, o.saleRows}}
	for _, g := range gens {
		for first := 0; first < g.n; first += o.perUpload {
			runID, _, err := upload(base, token, g.entity, g.gen, first, min(o.perUpload, g.n-first))
			if err != nil {
				return res, err
			}
			runs = append(runs, runID)
		}
	}
	res.uploadTime = time.Since(start)
	for {
		_, _, done, err := importProgress(base, token, runs)
		if err != nil {
			return res, err
		}
		if done {
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	res.importsDone = time.Since(start)
	// Fresh: the statistics projector's checkpoint has reached the end of
	// the log as it was when the imports completed. Each query reads the
	// checkpoint first and the log with constants, by its index: a join
	// of the two is planned as a scan of the whole log, seconds a query on
	// millions of events, which earlier runs counted as lag.
	var head string
	if err := conn.QueryRow(ctx, `SELECT transaction_id::text || ',' || global_position FROM events
		ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`).Scan(&head); err != nil {
		return res, err
	}
	checkpoint := func() (string, error) {
		var cp string
		err := conn.QueryRow(ctx, `SELECT transaction_id::text || ',' || global_position FROM projection_checkpoints
			WHERE name = 'campaign_stats'`).Scan(&cp)
		return cp, err
	}
	cp, err := checkpoint()
	if err != nil {
		return res, err
	}
	// What the projector still had to apply then.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events
		WHERE (transaction_id, global_position) > (split_part($1, ',', 1)::xid8, split_part($1, ',', 2)::bigint)
		AND (transaction_id, global_position) <= (split_part($2, ',', 1)::xid8, split_part($2, ',', 2)::bigint)
		AND event_type IN ('EventRecorded', 'SaleUpserted')`, cp, head).Scan(&res.backlog); err != nil {
		return res, err
	}
	for {
		var fresh bool
		err := conn.QueryRow(ctx, `SELECT (transaction_id, global_position) >= (split_part($1, ',', 1)::xid8, split_part($1, ',', 2)::bigint)
			FROM projection_checkpoints WHERE name = 'campaign_stats'`, head).Scan(&fresh)
		if err != nil {
			return res, err
		}
		if fresh {
			break
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return res, err
		}
	}
	res.fresh = time.Since(start)
	// The same by the database's clock, without the polling: from the end
	// of the last import to the projector's last checkpoint write.
	if err := conn.QueryRow(ctx, `SELECT extract(epoch FROM c.updated_at - (SELECT max(finished_at) FROM import_runs))
		FROM projection_checkpoints c WHERE c.name = 'campaign_stats'`).Scan(&res.lagSeconds); err != nil {
		return res, err
	}
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM campaign_stats_events), coalesce(sum(audience_size), 0),
		coalesce(sum(total_sales), 0) FROM campaign_stats`).Scan(&res.applied, &res.audience, &res.conversions); err != nil {
		return res, err
	}

	if res.page, err = latencies(base+"/api/campaign/actions/?limit=30", token, 200); err != nil {
		return res, err
	}
	if res.one, err = latencies(base+"/api/campaign/actions/?keys="+campaignKey(o.campaigns/2), token, 200); err != nil {
		return res, err
	}

	// A rebuild of the statistics from the whole log: its rate, and the
	// same figures (but cache_modified_at, a commit's time).
	before, err := figures(base, token)
	if err != nil {
		return res, err
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type IN ('EventRecorded', 'SaleUpserted',
		'CampaignCreated', 'CampaignActivated')`).Scan(&res.logEvents); err != nil {
		return res, err
	}
	start = time.Now()
	if _, err := runClientele(ctx, o.binary, url, env, "projections", "rebuild", "campaign_stats"); err != nil {
		return res, err
	}
	res.rebuild = time.Since(start)
	after, err := figures(base, token)
	res.sameAfterRebuild = bytes.Equal(before, after)
	return res, err
}

// figures reads every campaign's statistics, cache_modified_at left out.
func figures(base, token string) ([]byte, error) {
	var v json.RawMessage
	if err := do("GET", base+"/api/campaign/actions/?limit=100", token, nil, "", &v); err != nil {
		return nil, err
	}
	return regexp.MustCompile(`"cache_modified_at":("[^"]*"|null)`).ReplaceAll(v, nil), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// latencies requests url n times, one after another, and returns the
// sorted durations.
func latencies(url, token string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			return nil, err
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
		}
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out, nil
}

// campaignResult holds the figures of a campaigns run.
type campaignResult struct {
	customers, campaigns, events, saleRows int
	applied, logEvents, backlog            int64
	lagSeconds                             float64
	audience, conversions                  int64
	uploadTime, importsDone, fresh         time.Duration
	rebuild                                time.Duration
	sameAfterRebuild                       bool
	page, one                              []time.Duration
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func (r campaignResult) print(w *os.File) {
	fmt.Fprintf(w, "campaigns run:       %d campaigns, %d customers (imported first), %d campaign events, %d sale rows\n",
		r.campaigns, r.customers, r.events, r.saleRows)
	fmt.Fprintf(w, "uploads accepted:    %.1fs\n", r.uploadTime.Seconds())
	fmt.Fprintf(w, "imports completed:   %.1fs after the first upload\n", r.importsDone.Seconds())
	fmt.Fprintf(w, "figures fresh:       %.1fs after the first upload, %.2fs after the last import completed\n",
		r.fresh.Seconds(), (r.fresh - r.importsDone).Seconds())
	fmt.Fprintf(w, "projection applied:  %d campaign events and the sales, %.0f records/s from the first upload to fresh\n",
		r.applied, float64(r.events+r.saleRows)/r.fresh.Seconds())
	fmt.Fprintf(w, "projection lag:      %d events behind when the imports completed; its last checkpoint write %.2fs after the last import ended\n",
		r.backlog, r.lagSeconds)
	fmt.Fprintf(w, "figures:             audiences sum to %d, conversions to %d\n", r.audience, r.conversions)
	fmt.Fprintf(w, "rebuild:             %.1fs, %.0f events/s of the %d it reads; same figures: %t\n",
		r.rebuild.Seconds(), float64(r.logEvents)/r.rebuild.Seconds(), r.logEvents, r.sameAfterRebuild)
	fmt.Fprintf(w, "?limit=30:           p50 %v, p95 %v\n", percentile(r.page, 0.5).Round(100*time.Microsecond), percentile(r.page, 0.95).Round(100*time.Microsecond))
	fmt.Fprintf(w, "?keys=one:           p50 %v, p95 %v\n", percentile(r.one, 0.5).Round(100*time.Microsecond), percentile(r.one, 0.95).Round(100*time.Microsecond))
}
