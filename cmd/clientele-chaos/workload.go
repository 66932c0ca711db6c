package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// workload is the clients of a run: customer uploaders, each over an
// identity set of its own (so that the order of its uploads, which it
// makes one at a time, is the order the model applies), message posters
// and a reader.
type workload struct {
	c    *cluster
	api  *api
	hist *history
	dt   string
	seed uint64
}

const (
	uploaders          = 4
	identitiesPerOwner = 25
	posters            = 2
)

var tagPool = []string{"vip", "newsletter", "b2b", "churn-risk", "outage"}

// identity is the external_id of identity i of uploader u.
func identity(u, i int) string { return fmt.Sprintf("k%d-%d", u, i) }

// pick returns a node's base at random, "" when none is up.
func (w *workload) pick(rnd *rand.Rand) string {
	bases := w.c.bases()
	if len(bases) == 0 {
		return ""
	}
	return bases[rnd.IntN(len(bases))]
}

// run runs every client until ctx ends.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for u := range uploaders {
		wg.Go(func() { w.upload(ctx, u) })
	}
	for p := range posters {
		wg.Go(func() { w.post(ctx, p) })
	}
	wg.Go(func() { w.read(ctx) })
	wg.Wait()
}

// pause waits d or until ctx ends, and reports whether to go on.
func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// upload sends small customer uploads over uploader u's identities. What
// it believes exists only steers the choice of operations; the checker
// works from the history.
func (w *workload) upload(ctx context.Context, u int) {
	rnd := rand.New(rand.NewPCG(w.seed, uint64(100+u)))
	exists := map[string]bool{}
	gone := map[string]bool{} // deleted or forgotten: rejected from then on
	for seq := 0; pause(ctx, time.Duration(50+rnd.IntN(250))*time.Millisecond); seq++ {
		// Seven uploads of customers in ten; events and sales name the
		// same identities (some not there yet, or gone: rejected).
		switch d := rnd.IntN(20); {
		case d < 3:
			w.uploadEvents(rnd, u, seq)
			continue
		case d < 6:
			if ids := w.uploadSales(rnd, u, seq, gone); ids != nil {
				for _, id := range ids {
					exists[id] = true
				}
			}
			continue
		}
		var records []map[string]any
		for range 1 + rnd.IntN(4) {
			id := identity(u, rnd.IntN(identitiesPerOwner))
			rec := map[string]any{"external_id": id}
			switch d := rnd.IntN(100); {
			case d < 2 && exists[id] && !gone[id]:
				rec["is_deleted"] = true
			case d < 3 && exists[id]:
				rec["is_forgotten"] = true
			case d < 25 && exists[id]:
				rec["tags.add"] = []string{tagPool[rnd.IntN(len(tagPool))]}
			case d < 40 && exists[id]:
				rec["tags.remove"] = []string{tagPool[rnd.IntN(len(tagPool))]}
			case d < 60:
				rec["first_name"] = personalName(id, rnd)
			default:
				rec["first_name"] = personalName(id, rnd)
				var tags []string
				for _, t := range tagPool {
					if rnd.IntN(2) == 0 {
						tags = append(tags, t)
					}
				}
				if len(tags) == 0 {
					tags = tagPool[:1]
				}
				rec["tags"] = tags
			}
			records = append(records, rec)
		}
		e, ok := w.send(rnd, u, "customers", "upload", records)
		if !ok {
			continue
		}
		if e.Status == 200 {
			for _, rec := range records {
				id := rec["external_id"].(string)
				if rec["is_deleted"] != nil || rec["is_forgotten"] != nil {
					gone[id] = true
				} else if !gone[id] {
					exists[id] = true
				}
			}
		}
	}
}

// personalName is a first name for identity id: it names the identity,
// so that the forget checks find any trace of a forgotten person by
// their identity and name (personalTrace).
func personalName(id string, rnd *rand.Rand) string {
	return fmt.Sprintf("Name-%s-%d", id, rnd.IntN(1000))
}

// uploadEvents uploads 1-3 BROWSE events, each naming one of uploader
// u's identities as customer_id, each with a label of its own.
func (w *workload) uploadEvents(rnd *rand.Rand, u, seq int) {
	var records []map[string]any
	for i := range 1 + rnd.IntN(3) {
		records = append(records, map[string]any{
			"type": "BROWSE", "date": time.Now().UTC().Format(time.RFC3339),
			"customer_id": identity(u, rnd.IntN(identitiesPerOwner)),
			"label":       fmt.Sprintf("ev-%d-%d-%d", u, seq, i),
		})
	}
	w.send(rnd, u, "events", "upload-events", records)
}

// send sends records of entity to a node picked at random as uploader u,
// and records the request and its answer as op; ok is false when no node
// was up to send it to.
func (w *workload) send(rnd *rand.Rand, u int, entity, op string, records []map[string]any) (e entry, ok bool) {
	base := w.pick(rnd)
	if base == "" {
		return entry{}, false
	}
	body, _ := json.Marshal(map[string]any{entity: records})
	e = w.api.call(base, "POST", "/api/"+entity+"/upload/", body)
	e.Client, e.Op = fmt.Sprintf("uploader-%d", u), op
	w.hist.add(e)
	return e, true
}

// uploadSales uploads 1-2 new sales (transactions with 1-2 rows each)
// of uploader u's identities, which a sale creates when nobody holds
// them; it returns the identities of an acknowledged upload that were
// not gone.
func (w *workload) uploadSales(rnd *rand.Rand, u, seq int, gone map[string]bool) []string {
	var records []map[string]any
	var ids []string
	for i := range 1 + rnd.IntN(2) {
		id := identity(u, rnd.IntN(identitiesPerOwner))
		var rows []map[string]any
		for range 1 + rnd.IntN(2) {
			rows = append(rows, map[string]any{"product_id": fmt.Sprintf("p-%d", rnd.IntN(4)), "quantity": 1 + rnd.IntN(3), "unit_price": 100 * (1 + rnd.IntN(50))})
		}
		records = append(records, map[string]any{
			"sale_external_id": fmt.Sprintf("sale-%d-%d-%d", u, seq, i),
			"sale_date":        time.Now().UTC().Format(time.RFC3339),
			"sale_customer_id": id,
			"sale_rows":        rows,
		})
		if !gone[id] {
			ids = append(ids, id)
		}
	}
	e, ok := w.send(rnd, u, "sales", "upload-sales", records)
	if !ok {
		return nil
	}
	if e.Status != 200 {
		return nil
	}
	return ids
}

// post posts small batches of messages, each naming its poster and a
// sequence number, so that every message is distinct.
func (w *workload) post(ctx context.Context, p int) {
	rnd := rand.New(rand.NewPCG(w.seed, uint64(200+p)))
	// About 4 messages a second in all: as many as the unbatched outlet,
	// one request per message to a receiver that fails and stalls some,
	// delivers, so that it is not left behind by the end of the run.
	for seq := 0; pause(ctx, time.Duration(400+rnd.IntN(800))*time.Millisecond); seq++ {
		base := w.pick(rnd)
		if base == "" {
			continue
		}
		var msgs []map[string]any
		for i := range 1 + rnd.IntN(2) {
			msgs = append(msgs, map[string]any{"poster": p, "post": seq, "i": i})
		}
		body, _ := json.Marshal(map[string]any{"messages": msgs})
		e := w.api.call(base, "POST", "/api/datatargets/"+w.dt+"/post/", body)
		e.Client, e.Op = fmt.Sprintf("poster-%d", p), "post"
		w.hist.add(e)
	}
}

// read retrieves customers and runs a data query now and then.
func (w *workload) read(ctx context.Context) {
	rnd := rand.New(rand.NewPCG(w.seed, 300))
	for pause(ctx, time.Duration(500+rnd.IntN(1000))*time.Millisecond) {
		base := w.pick(rnd)
		if base == "" {
			continue
		}
		var e entry
		if rnd.IntN(2) == 0 {
			e = w.api.call(base, "GET", "/api/data/customers/?limit=20", nil)
			e.Op = "retrieve"
		} else {
			e = w.api.call(base, "POST", "/api/data/query/",
				[]byte(`{"datatype":"events","match":{"type":"CHAOS_NONE"},"update":{"is_deleted":true}}`))
			e.Op = "query"
		}
		e.Client = "reader"
		if len(e.Answer) > 2000 {
			e.Answer = nil // retrievals are long; their status is what is checked
		}
		w.hist.add(e)
	}
}

// faultKinds are the faults a run injects, each at least once: a node
// killed, a NATS server killed, the PostgreSQL primary lost and the
// standby promoted, a node cut off from PostgreSQL, from NATS or from
// both (a partition, then healed), and, on one link of one node, latency,
// connections reset, or data dropped and the connection closed after a
// while (toxiproxy's latency, reset_peer and timeout toxics).
var faultKinds = []string{"node-kill", "nats-kill", "pg-failover", "partition-pg", "partition-nats", "partition-all", "latency", "reset", "timeout"}

// fault is one planned fault: at At after the start, down for Down, on
// node (or NATS server) Node; a link fault on Node's Link, a toxic with
// the toxiproxy attributes Attrs.
type fault struct {
	Kind  string
	At    time.Duration
	Down  time.Duration
	Node  int
	Link  string `json:",omitempty"`
	Attrs string `json:",omitempty"`
}

// links a partition cuts, by kind.
func partitioned(kind string) []string {
	var pgs, nats []string
	for i := range 2 {
		pgs = append(pgs, pgLink(i))
	}
	for i := range natsServers {
		nats = append(nats, natsLink(i))
	}
	switch kind {
	case "partition-pg":
		return pgs
	case "partition-nats":
		return nats
	}
	return append(pgs, nats...)
}

// schedule plans the faults of a run of duration d from seed: each kind
// once, and another one drawn (the failover excepted: there is one
// standby) for every further 30 s, spread over the first 80% of the run
// (the rest lets the service settle under load).
func schedule(seed uint64, d time.Duration) []fault {
	rnd := rand.New(rand.NewPCG(seed, 400))
	kinds := slices.Clone(faultKinds)
	for range int(d/(30*time.Second)) - len(kinds) {
		kinds = append(kinds, faultKinds[rnd.IntN(len(faultKinds))])
		if kinds[len(kinds)-1] == "pg-failover" {
			kinds[len(kinds)-1] = "node-kill"
		}
	}
	rnd.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	slot := d * 8 / 10 / time.Duration(len(kinds))
	allLinks := partitioned("partition-all")
	var out []fault
	for i, k := range kinds {
		f := fault{Kind: k, At: d/20 + time.Duration(i)*slot + time.Duration(rnd.Int64N(int64(slot/3))), Node: rnd.IntN(3)}
		switch k {
		case "node-kill":
			f.Down = time.Duration(1+rnd.IntN(5)) * time.Second
		case "nats-kill":
			f.Down = time.Duration(2+rnd.IntN(6)) * time.Second
		case "pg-failover":
			f.Down = time.Duration(1+rnd.IntN(4)) * time.Second
		case "partition-pg", "partition-nats", "partition-all":
			f.Down = time.Duration(2000+rnd.IntN(5000)) * time.Millisecond
		case "latency":
			f.Link = allLinks[rnd.IntN(len(allLinks))]
			f.Down = time.Duration(3000+rnd.IntN(5000)) * time.Millisecond
			f.Attrs = fmt.Sprintf(`{"latency":%d,"jitter":%d}`, 100+rnd.IntN(900), rnd.IntN(100))
		case "reset":
			f.Link = allLinks[rnd.IntN(len(allLinks))]
			f.Down = time.Duration(1000+rnd.IntN(4000)) * time.Millisecond
			f.Attrs = fmt.Sprintf(`{"timeout":%d}`, rnd.IntN(500))
		case "timeout":
			f.Link = allLinks[rnd.IntN(len(allLinks))]
			f.Down = time.Duration(2000+rnd.IntN(4000)) * time.Millisecond
			f.Attrs = fmt.Sprintf(`{"timeout":%d}`, 500+rnd.IntN(2500))
		}
		out = append(out, f)
	}
	return out
}

// toxicOf is the toxiproxy toxic of a link fault's kind.
var toxicOf = map[string]string{"latency": "latency", "reset": "reset_peer", "timeout": "timeout"}

// inject runs the faults at their times; each is a history entry from
// the fault to its healing.
func inject(ctx context.Context, c *cluster, hist *history, faults []fault, start time.Time, logf func(string, ...any)) error {
	failedOver := false
	for n, f := range faults {
		if f.Link == pgLink(0) || f.Link == pgLink(1) {
			// A fault drawn for either PostgreSQL link lands on the link
			// to the primary of now, the one the node uses: the standby
			// takes no connection, and the old primary is gone after
			// the failover.
			f.Link = pgLink(0)
			if failedOver {
				f.Link = pgLink(1)
			}
		}
		if !pause(ctx, time.Until(start.Add(f.At))) {
			return nil
		}
		e := entry{Client: "nemesis", Op: "fault:" + f.Kind, Start: time.Now()}
		e.Request, _ = json.Marshal(f)
		switch f.Kind {
		case "node-kill":
			nd := c.nodes[f.Node]
			c.kill(nd)
			e.Node = fmt.Sprintf("node-%d", f.Node)
			pause(ctx, f.Down)
			if err := c.start(context.WithoutCancel(ctx), nd); err != nil {
				return fmt.Errorf("restart node %d: %w", f.Node, err)
			}
		case "nats-kill":
			c.killNATS(f.Node)
			e.Node = fmt.Sprintf("nats-%d", f.Node)
			pause(ctx, f.Down)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			err := c.restartNATS(rctx, f.Node)
			cancel()
			if err != nil {
				return fmt.Errorf("restart NATS server %d: %w", f.Node, err)
			}
		case "pg-failover":
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			err := c.primary.Crash(rctx)
			if err == nil {
				pause(ctx, f.Down)
				err = c.standby.Promote(rctx)
			}
			cancel()
			if err != nil {
				return fmt.Errorf("failover: %w", err)
			}
			failedOver = true
		case "partition-pg", "partition-nats", "partition-all":
			// Every byte dropped both ways, on every connection and on
			// every new one (accepted, then silent), as when packets
			// are lost; healed, the connections it held are closed.
			name := fmt.Sprintf("fault%d", n)
			e.Node = fmt.Sprintf("node-%d", f.Node)
			if err := c.links.addToxic(f.Node, partitioned(f.Kind), name, "timeout", `{"timeout":0}`); err != nil {
				return err
			}
			pause(ctx, f.Down)
			c.links.removeToxic(context.WithoutCancel(ctx), f.Node, partitioned(f.Kind), name)
		case "latency", "reset", "timeout":
			name := fmt.Sprintf("fault%d", n)
			e.Node = fmt.Sprintf("node-%d/%s", f.Node, f.Link)
			if err := c.links.addToxic(f.Node, []string{f.Link}, name, toxicOf[f.Kind], f.Attrs); err != nil {
				return err
			}
			pause(ctx, f.Down)
			c.links.removeToxic(context.WithoutCancel(ctx), f.Node, []string{f.Link}, name)
		}
		e.End = time.Now()
		hist.add(e)
		logf("fault %s %s healed after %v", f.Kind, e.Node, e.End.Sub(e.Start).Round(time.Millisecond))
	}
	return nil
}
