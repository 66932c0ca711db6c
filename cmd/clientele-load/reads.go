package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"
)

// The reads of a customers run (issue 15): once every customer is
// retrievable, paging through all of them as a client does
// (GET /api/data/customers/?limit=pageLimit, following next_url) against
// a COPY TO STDOUT of the same documents from the read model's table; and,
// with the server stopped, `clientele projections rebuild customers`
// against the COPY of the records into one jsonb table.

// pageLimit is the page size of the paging client.
const pageLimit = 1000

// readResult holds the figures of the reads; zero when not measured.
type readResult struct {
	docs       int
	bytes      int64
	paging     time.Duration
	copyDocs   int64
	copyBytes  int64
	copyOut    time.Duration
	rebuild    time.Duration
	rebuildOut string
}

// measuresReads reports whether the run of entity measures the reads.
func measuresReads(entity string) bool { return entity == "customers" }

// pageCustomers pages through every customer of the company. The client
// reads each page whole and takes its count and next_url, with gjson, as a
// light client would; the address in next_url is the company's host, so
// its path and query are asked of the server directly, with that host.
func pageCustomers(base, token string, r *readResult) error {
	next := fmt.Sprintf("%s/api/data/customers/?limit=%d", base, pageLimit)
	start := time.Now()
	for next != "" {
		req, err := http.NewRequest(http.MethodGet, next, nil)
		if err != nil {
			return err
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", next, resp.StatusCode, b)
		}
		r.bytes += int64(len(b))
		page := gjson.GetManyBytes(b, "customers.#", "next_url")
		r.docs += int(page[0].Int())
		next = ""
		if page[1].Exists() {
			u, err := url.Parse(page[1].String())
			if err != nil {
				return fmt.Errorf("next_url %q: %w", page[1].String(), err)
			}
			next = base + u.RequestURI()
		}
	}
	r.paging = time.Since(start)
	return nil
}

// copyOutCustomers COPYs the documents retrieval shows, in its order, to
// the client: what paging would cost without the service. The run has one
// company, so no company filter is needed for the same documents.
func copyOutCustomers(ctx context.Context, conn *pgx.Conn, r *readResult) error {
	w := &countingDiscard{}
	start := time.Now()
	tag, err := conn.PgConn().CopyTo(ctx, w, `COPY (SELECT doc FROM customers WHERE NOT is_deleted ORDER BY company_id, customer_id) TO STDOUT`)
	r.copyOut = time.Since(start)
	if err != nil {
		return fmt.Errorf("COPY out: %w", err)
	}
	r.copyDocs, r.copyBytes = tag.RowsAffected(), w.n
	return nil
}

type countingDiscard struct{ n int64 }

func (w *countingDiscard) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// rebuildCustomers runs `clientele projections rebuild customers` on the
// run's database (with the server stopped) and checks that every
// customer is retrievable again.
func rebuildCustomers(ctx context.Context, o options, dbURL string, env []string, conn *pgx.Conn, want int, r *readResult) error {
	start := time.Now()
	out, err := runClientele(ctx, o.binary, dbURL, env, "projections", "rebuild", "customers")
	if err != nil {
		return err
	}
	r.rebuild = time.Since(start)
	r.rebuildOut = string(bytes.TrimSpace(out))
	n, err := countRetrievable(ctx, conn, "customers")
	if err != nil {
		return err
	}
	if n < want {
		return fmt.Errorf("after the rebuild %d customers are retrievable, want %d", n, want)
	}
	return nil
}

func (r readResult) print(w io.Writer, copyPerSec float64) {
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	paging, copyOut := rate(r.docs, r.paging), rate(int(r.copyDocs), r.copyOut)
	fmt.Fprintf(w, "paging:              %.0f customers/s (limit %d, %.1fs, %d customers, %.0f MB)\n", paging, pageLimit, r.paging.Seconds(), r.docs, float64(r.bytes)/1e6)
	fmt.Fprintf(w, "COPY out:            %.0f customers/s (from the read model, %.1fs, %d documents, %.0f MB)\n", copyOut, r.copyOut.Seconds(), r.copyDocs, float64(r.copyBytes)/1e6)
	fmt.Fprintf(w, "paging / COPY out:   %.3f\n", paging/copyOut)
	rebuild := rate(r.docs, r.rebuild)
	fmt.Fprintf(w, "rebuild customers:   %.0f customers/s (%.1fs; %s)\n", rebuild, r.rebuild.Seconds(), r.rebuildOut)
	fmt.Fprintf(w, "rebuild / COPY:      %.3f (COPY into jsonb)\n", rebuild/copyPerSec)
}
