package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The floor (issue 15) is the least time PostgreSQL can take to store the
// rows an import leaves, whatever the code in front of it: the run's own
// rows, read back once the server has stopped, COPYed again into empty
// copies of their tables (same columns, same indexes) in chunks of the
// import's size, with nothing decided, encoded, sealed or looked up. The
// import does these writes and more, so its end-to-end rate can be no
// better than the floor's: the floor against the upsert baseline is the
// best ratio that storing these rows allows.
//
// Two shapes: serial, every table of a chunk in one transaction on one
// connection, and in parallel, the write side on one connection and the
// read model on another at the same time (the import and the projector
// on two cores, as the service runs them). Only the writes are timed.
//
// The floor leaves out rows an import also writes (the outbox message,
// the chunk's bookkeeping, a stream's or a counter's one row a chunk, and
// for events and sales the customers and products they create), so it is
// the more favourable to the import.

// floorTable is a table an entity's import writes rows to.
type floorTable struct {
	name string
	// where selects the rows the timed import wrote.
	where string
	// order is the order they were written in (empty: as stored).
	order     string
	readModel bool
}

// floorTables are, by entity, the tables its records write a row to: the
// write side (the log, the stream, the state, the data key) and the read
// model.
var floorTables = map[string][]floorTable{
	"customers": {
		{name: "events", where: "stream_id LIKE 'customer-%'"},
		{name: "streams", where: "stream_id LIKE 'customer-%'", order: "stream_key"},
		{name: "customer_states", order: "company_id, customer_id"},
		{name: "customer_keys", order: "company_id, customer_id"},
		{name: "customers", order: "company_id, customer_id", readModel: true},
	},
	"events": {
		{name: "events", where: "event_type = 'EventRecorded'"},
		{name: "activity_events", order: "company_id, event_id", readModel: true},
	},
	"sales": {
		{name: "events", where: "stream_id LIKE 'sale-%'"},
		{name: "streams", where: "stream_id LIKE 'sale-%'", order: "stream_key"},
		{name: "sale_states", order: "company_id, external_id"},
		{name: "sales", order: "company_id, sale_id", readModel: true},
	},
}

// floorResult is the floor's figures.
type floorResult struct {
	n                int
	serial, parallel time.Duration
	// spent is, by table, the time its COPYs took in the serial shape.
	spent []time.Duration
	names []string
}

func (f floorResult) print(w *os.File, baseline string, rate float64) {
	if f.n == 0 {
		return
	}
	serial := float64(f.n) / f.serial.Seconds()
	parallel := float64(f.n) / f.parallel.Seconds()
	fmt.Fprintf(w, "floor, serial:       %.0f records/s (%.1fs; / %s %.3f)\n", serial, f.serial.Seconds(), baseline, serial/rate)
	fmt.Fprintf(w, "floor, in parallel:  %.0f records/s (%.1fs; / %s %.3f)\n", parallel, f.parallel.Seconds(), baseline, parallel/rate)
	for i, name := range f.names {
		fmt.Fprintf(w, "  floor %-16s %5.1f µs a record (serial)\n", name+":", float64(f.spent[i].Microseconds())/float64(f.n))
	}
}

// measureFloor writes the run's n records' rows again as the floor, serial
// and then in parallel, and drops its tables.
func measureFloor(ctx context.Context, url, entity string, n int) (floorResult, error) {
	res := floorResult{n: n}
	tables, ok := floorTables[entity]
	if !ok {
		return res, nil
	}
	conns := make([]*pgx.Conn, len(tables)+2) // a reader a table, and two writers
	for i := range conns {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return res, err
		}
		defer c.Close(context.Background())
		conns[i] = c
	}
	w, other, readers := conns[0], conns[1], conns[2:]
	res.spent = make([]time.Duration, len(tables))
	for _, t := range tables {
		res.names = append(res.names, t.name)
	}
	for _, parallel := range []bool{false, true} {
		spent, err := floorPass(ctx, w, other, readers, tables, n, parallel, res.spent)
		if err != nil {
			return res, fmt.Errorf("floor: %w", err)
		}
		if parallel {
			res.parallel = spent
		} else {
			res.serial = spent
		}
	}
	return res, nil
}

// floorSource is one table's rows, read in the order they were written,
// and the number of them a chunk takes.
type floorSource struct {
	t        floorTable
	columns  []string
	rows     pgx.Rows
	perChunk int
}

// floorPass creates the copies, writes every chunk into them (serial or
// in parallel), and drops them. It returns the time the writes took and,
// serial, adds each table's to spent.
func floorPass(ctx context.Context, w, other *pgx.Conn, readers []*pgx.Conn, tables []floorTable, n int, parallel bool, spent []time.Duration) (time.Duration, error) {
	chunks := (n + upsertBatch - 1) / upsertBatch
	sources := make([]floorSource, len(tables))
	for i, t := range tables {
		s := floorSource{t: t}
		var selected []string
		cols, _ := readers[i].Query(ctx, `SELECT column_name, data_type = 'jsonb' FROM information_schema.columns
			WHERE table_name = $1 AND table_schema = current_schema() AND data_type <> 'xid8'
			ORDER BY ordinal_position`, t.name)
		var name string
		var isJSON bool
		if _, err := pgx.ForEachRow(cols, []any{&name, &isJSON}, func() error {
			s.columns = append(s.columns, name)
			if isJSON {
				// As its text, which COPY writes back as it was.
				name += "::text"
			}
			selected = append(selected, name)
			return nil
		}); err != nil {
			return 0, err
		}
		where, order := "true", ""
		if t.where != "" {
			where = t.where
		}
		if t.order != "" {
			order = " ORDER BY " + t.order
		}
		var count int
		if err := readers[i].QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s`, t.name, where)).Scan(&count); err != nil {
			return 0, err
		}
		s.perChunk = (count + chunks - 1) / chunks
		if _, err := w.Exec(ctx, fmt.Sprintf(`CREATE TABLE floor_%s (LIKE %s INCLUDING ALL)`, t.name, t.name)); err != nil {
			return 0, err
		}
		var err error
		s.rows, err = readers[i].Query(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s%s`, strings.Join(selected, ", "), t.name, where, order))
		if err != nil {
			return 0, err
		}
		defer s.rows.Close()
		sources[i] = s
	}
	var total time.Duration
	for range chunks {
		chunk := make([][][]any, len(sources))
		for i := range sources {
			s := &sources[i]
			for len(chunk[i]) < s.perChunk && s.rows.Next() {
				v, err := s.rows.Values()
				if err != nil {
					return 0, err
				}
				chunk[i] = append(chunk[i], v)
			}
			if err := s.rows.Err(); err != nil {
				return 0, fmt.Errorf("%s: %w", s.t.name, err)
			}
		}
		start := time.Now()
		if err := floorWrite(ctx, w, other, sources, chunk, parallel, spent); err != nil {
			return 0, err
		}
		total += time.Since(start)
	}
	for _, s := range sources {
		s.rows.Close()
		if _, err := w.Exec(ctx, `DROP TABLE floor_`+s.t.name); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// floorWrite writes one chunk: every table in one transaction on w, or,
// parallel, the read model's in its own on other at the same time.
func floorWrite(ctx context.Context, w, other *pgx.Conn, sources []floorSource, chunk [][][]any, parallel bool, spent []time.Duration) error {
	write := func(conn *pgx.Conn, readModel bool) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background()) //nolint:errcheck
		for i, s := range sources {
			if parallel && s.t.readModel != readModel {
				continue
			}
			start := time.Now()
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"floor_" + s.t.name}, s.columns, pgx.CopyFromRows(chunk[i])); err != nil {
				return fmt.Errorf("%s: %w", s.t.name, err)
			}
			if !parallel {
				spent[i] += time.Since(start)
			}
		}
		return tx.Commit(ctx)
	}
	if !parallel {
		return write(w, false)
	}
	done := make(chan error, 1)
	go func() { done <- write(other, true) }()
	err := write(w, false)
	if err2 := <-done; err == nil {
		err = err2
	}
	return err
}
