package systemtest_test

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

var measureAsOf = flag.Bool("measure-as-of", false,
	"measure GET /api/data/customers/<id>/?as_of= on a customer with 1,000 events (docs/benchmarks.md)")

// TestCustomerAsOfLatency measures, over HTTP on the real stack, the
// answer time of a customer as of a random instant of its 1,000 events,
// against the plain GET of the same customer (the read model's row) in
// the same run, interleaved. It runs only with -measure-as-of.
func TestCustomerAsOfLatency(t *testing.T) {
	if !*measureAsOf {
		t.Skip("a measurement: run with -measure-as-of")
	}
	// No rate limit: the measurement asks as fast as it is answered.
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit, c.RateBurst = 1e6, 1e6 })
	e.runProjections(retrievalproj.NewCustomers(e.keys))
	admin := e.userToken(e.admin, acmeHost)
	const id, events, rounds = "0190000000007000800000000000a50f", 1000, 500
	for i := range events {
		set := map[string]any{"last_name": fmt.Sprintf("Name %d", i), "city": "Helsinki", "tags": []string{"t" + fmt.Sprint(i%7)}}
		if i == 0 {
			set = permissions(set)
			set["email"] = "ann@example.com"
		}
		e.appendCustomers(e.acme, customerRecord{id: id, set: set})
	}
	e.waitProjections()
	at := e.recordedAts(admin, id)
	if len(at) != events {
		t.Fatalf("%d events, want %d", len(at), events)
	}
	get := func(query string) time.Duration {
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/data/customers/"+id+"/"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = acmeHost
		req.Header.Set("Authorization", "Bearer "+admin)
		start := time.Now()
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		took := time.Since(start)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", query, res.StatusCode)
		}
		return took
	}
	var asOf, last, plain []time.Duration
	for range rounds {
		when := at[rand.IntN(len(at))].UTC().Format(time.RFC3339Nano)
		asOf = append(asOf, get("?as_of="+when))
		last = append(last, get("?as_of="+at[len(at)-1].UTC().Format(time.RFC3339Nano)))
		plain = append(plain, get(""))
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"as_of a random instant", asOf}, {"as_of the last event (all 1,000 folded)", last}, {"plain GET (read model)", plain}} {
		slices.Sort(m.d)
		q := func(p float64) time.Duration { return m.d[int(p*float64(len(m.d)-1))] }
		t.Logf("%-42s n=%d p50=%v p95=%v p99=%v max=%v", m.name, len(m.d), q(0.5), q(0.95), q(0.99), m.d[len(m.d)-1])
	}
}
