package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The upsert baseline (issue 15) is what a shop would otherwise run: a
// conventional service, not event-sourced, that stores the same records
// by batched upserts into one indexed table. It runs on the run's own
// database once the server has stopped, on one connection (as one
// company's import writes), each statement of upsertBatch rows its own
// transaction, so that every batch is durable as an import chunk is.
// Each record is decoded for its key columns, as such a service would.

// upsertBatch is the rows of one statement.
const upsertBatch = 1000

// upsertTable is, by entity, the conventional table of its records and
// how one record maps to its columns (the last column is the document).
type upsertTable struct {
	create string
	// insert takes one array per column (text[], the last jsonb[]).
	insert  string
	columns func(doc []byte) ([]string, error)
}

var upsertTables = map[string]upsertTable{
	// The baseline: a primary key on external_id, unique email
	// and phone number, a jsonb document.
	"customers": {
		create: `CREATE TABLE load_upsert (
			external_id  text PRIMARY KEY,
			email        text UNIQUE,
			phone_number text UNIQUE,
			doc          jsonb NOT NULL)`,
		insert: `INSERT INTO load_upsert (external_id, email, phone_number, doc)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])
			ON CONFLICT (external_id) DO UPDATE
			SET email = excluded.email, phone_number = excluded.phone_number, doc = excluded.doc`,
		columns: func(doc []byte) ([]string, error) {
			var r struct {
				ExternalID  string `json:"external_id"`
				Email       string `json:"email"`
				PhoneNumber string `json:"phone_number"`
			}
			err := json.Unmarshal(doc, &r)
			return []string{r.ExternalID, r.Email, r.PhoneNumber}, err
		},
	},
	// A sale row keyed by its external id, found by its transaction's.
	"sales": {
		create: `CREATE TABLE load_upsert (
			external_id      text PRIMARY KEY,
			sale_external_id text NOT NULL,
			doc              jsonb NOT NULL);
			CREATE INDEX ON load_upsert (sale_external_id)`,
		insert: `INSERT INTO load_upsert (external_id, sale_external_id, doc)
			SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])
			ON CONFLICT (external_id) DO UPDATE
			SET sale_external_id = excluded.sale_external_id, doc = excluded.doc`,
		columns: func(doc []byte) ([]string, error) {
			var r struct {
				ExternalID     string `json:"external_id"`
				SaleExternalID string `json:"sale_external_id"`
			}
			err := json.Unmarshal(doc, &r)
			return []string{r.ExternalID, r.SaleExternalID}, err
		},
	},
	// An event has no key of its own: it is inserted, with a generated id,
	// and indexed by its customer.
	"events": {
		create: `CREATE TABLE load_upsert (
			id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			customer_id text NOT NULL,
			type        text NOT NULL,
			doc         jsonb NOT NULL);
			CREATE INDEX ON load_upsert (customer_id)`,
		insert: `INSERT INTO load_upsert (customer_id, type, doc)
			SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])`,
		columns: func(doc []byte) ([]string, error) {
			var r struct {
				CustomerID string `json:"customer_id"`
				Type       string `json:"type"`
			}
			err := json.Unmarshal(doc, &r)
			return []string{r.CustomerID, r.Type}, err
		},
	},
}

// upsertRecords stores the n records of gen in the entity's conventional
// table and returns the time it took; 0 for an entity without one.
func upsertRecords(ctx context.Context, conn *pgx.Conn, entity string, gen generator, n int) (time.Duration, error) {
	t, ok := upsertTables[entity]
	if !ok {
		return 0, nil
	}
	if _, err := conn.Exec(ctx, t.create); err != nil {
		return 0, fmt.Errorf("upsert baseline: %w", err)
	}
	start := time.Now()
	for first := 0; first < n; first += upsertBatch {
		// One array per column, then the documents: fresh each batch,
		// since the statement's arguments are encoded when it runs.
		var cols [][]string
		var docs []json.RawMessage
		for i := first; i < min(first+upsertBatch, n); i++ {
			doc := gen(i)
			row, err := t.columns(doc)
			if err != nil {
				return 0, fmt.Errorf("upsert baseline: record %d: %w", i, err)
			}
			if cols == nil {
				cols = make([][]string, len(row))
			}
			for c, v := range row {
				cols[c] = append(cols[c], v)
			}
			docs = append(docs, doc)
		}
		args := make([]any, 0, len(cols)+1)
		for _, c := range cols {
			args = append(args, c)
		}
		args = append(args, docs)
		if _, err := conn.Exec(ctx, t.insert, args...); err != nil {
			return 0, fmt.Errorf("upsert baseline: records %d..: %w", first, err)
		}
	}
	return time.Since(start), nil
}
