package imports_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/ingest/ingesttest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

func stage(t *testing.T, pool *pgxpool.Pool, id string, body io.Reader, lim ingest.Limits) (int, error) {
	t.Helper()
	recs, err := ingest.NewRecords(body, ingest.JSON, "", imports.UploadShape(importing.Customers), lim)
	if err != nil {
		t.Fatal(err)
	}
	run := imports.Run{ID: id, CompanyID: "acme", Entity: importing.Customers, Actor: "system", Source: "test", CorrelationID: "c1"}
	n, err := imports.NewStore(pool, imports.TestKeys(t)).Stage(context.Background(), run, recs, lim)
	return n, imports.UploadError(err) // as StageUploadHandler returns it
}

type chunkRow struct {
	Seq, First, Records, Lines int
}

func chunks(t *testing.T, pool *pgxpool.Pool, runID string) []chunkRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT seq, first_index, records FROM import_chunks WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chunkRow, error) {
		var c chunkRow
		return c, row.Scan(&c.Seq, &c.First, &c.Records)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The payloads are sealed: read through the store, as the worker does.
	store := imports.NewStore(pool, imports.TestKeys(t))
	for i, c := range out {
		records, _, ok, err := store.PeekChunk(context.Background(), runID, c.Seq)
		if err != nil || !ok {
			t.Fatalf("chunk %d: %v, %v", c.Seq, ok, err)
		}
		out[i].Lines = len(records)
	}
	return out
}

func messages(t *testing.T, pool *pgxpool.Pool) []imports.ChunkMessage {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT payload::text FROM watermill_import_chunks ORDER BY transaction_id, "offset"`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (imports.ChunkMessage, error) {
		var s string
		if err := row.Scan(&s); err != nil {
			return imports.ChunkMessage{}, err
		}
		return imports.ParseChunkMessage([]byte(s))
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runState(t *testing.T, pool *pgxpool.Pool, id string) (state string, received int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT state, received FROM import_runs WHERE id = $1`, id).Scan(&state, &received)
	if err == pgx.ErrNoRows {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return state, received
}

// TestStage checks the chunks and messages of a staged upload.
func TestStage(t *testing.T) {
	pool := pgtest.NewPool(t)
	n, err := stage(t, pool, "run1", ingesttest.Upload(2500, 50), ingest.Limits{ChunkRecords: 1000})
	if err != nil || n != 2500 {
		t.Fatalf("staged %d records, %v; want 2500", n, err)
	}
	want := []chunkRow{{0, 0, 1000, 1000}, {1, 1000, 1000, 1000}, {2, 2000, 500, 500}}
	if diff := cmp.Diff(want, chunks(t, pool, "run1")); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	wantMsgs := []imports.ChunkMessage{{RunID: "run1", Seq: 0, CompanyID: "acme"}, {RunID: "run1", Seq: 1, CompanyID: "acme"}, {RunID: "run1", Seq: 2, CompanyID: "acme"}}
	if diff := cmp.Diff(wantMsgs, messages(t, pool)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if state, received := runState(t, pool, "run1"); state != string(importing.Scheduled) || received != 2500 {
		t.Errorf("run %s with %d records, want scheduled with 2500", state, received)
	}

	// Large records end chunks early.
	if _, err := stage(t, pool, "run2", ingesttest.Upload(100, 1000), ingest.Limits{ChunkBytes: 10_000}); err != nil {
		t.Fatal(err)
	}
	cs := chunks(t, pool, "run2")
	for _, c := range cs[:len(cs)-1] {
		if c.Records < 10 || c.Records > 11 {
			t.Errorf("chunk %+v: want about 10 records of 1 KB per 10 KB chunk", c)
		}
	}
}

func TestStageEmpty(t *testing.T) {
	pool := pgtest.NewPool(t)
	if _, err := stage(t, pool, "empty", strings.NewReader(`{"customers": []}`), ingest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if state, _ := runState(t, pool, "empty"); state != string(importing.Completed) {
		t.Errorf("empty run is %q, want completed", state)
	}
	if m := messages(t, pool); len(m) != 0 {
		t.Errorf("messages %v for an empty upload", m)
	}
}

// TestStageInvalidLeavesNothing checks that a body found malformed after
// chunks were staged leaves no run, no chunk and no message.
func TestStageInvalidLeavesNothing(t *testing.T) {
	pool := pgtest.NewPool(t)
	body := io.MultiReader(strings.NewReader(`[`), strings.NewReader(strings.TrimSuffix(strings.TrimPrefix(
		readString(t, ingesttest.Upload(300, 40)), "["), "]")), strings.NewReader(`, 17]`))
	_, err := stage(t, pool, "bad", body, ingest.Limits{ChunkRecords: 100})
	if domain.ErrorCode(err) != domain.Invalid || !strings.Contains(err.Error(), "record 300") {
		t.Fatalf("error %v, want invalid_request about record 300", err)
	}
	if state, _ := runState(t, pool, "bad"); state != "" {
		t.Errorf("run left in state %q", state)
	}
	if c := chunks(t, pool, "bad"); len(c) != 0 {
		t.Errorf("chunks left: %v", c)
	}
	if m := messages(t, pool); len(m) != 0 {
		t.Errorf("messages published: %v", m)
	}
}

func readString(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCleanUp checks that only stalled uploads are deleted.
func TestCleanUp(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := stage(t, pool, "done", ingesttest.Upload(10, 40), ingest.Limits{}); err != nil {
		t.Fatal(err)
	}
	for i, age := range []string{"2 hours", "1 minute"} {
		id := fmt.Sprintf("recv%d", i)
		_, err := pool.Exec(ctx, `INSERT INTO import_runs (id, company_id, entity, state, actor, source, correlation_id, updated_at)
			VALUES ($1, 'acme', 'customers', 'receiving', 'system', 'test', 'c', now() - $2::interval)`, id, age)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO import_chunks (run_id, seq, first_index, records, payload) VALUES ($1, 0, 0, 1, '{}')`, id); err != nil {
			t.Fatal(err)
		}
	}
	n, err := imports.NewStore(pool, imports.TestKeys(t)).CleanUp(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("cleaned up %d runs, %v; want 1", n, err)
	}
	for id, want := range map[string]string{"done": "scheduled", "recv0": "", "recv1": "receiving"} {
		if state, _ := runState(t, pool, id); state != want {
			t.Errorf("run %s is %q, want %q", id, state, want)
		}
	}
	if c := chunks(t, pool, "recv0"); len(c) != 0 {
		t.Errorf("chunks of the abandoned run left: %v", c)
	}
	if c := chunks(t, pool, "recv1"); len(c) != 1 {
		t.Errorf("chunks of the live upload: %v", c)
	}
}

// The rows of one sale share a chunk: a full chunk is cut where the
// sale_external_id changes, up to four times the chunk size.
func TestStageKeepsSalesTogether(t *testing.T) {
	pool := pgtest.NewPool(t)
	var body strings.Builder
	body.WriteString("[")
	for i, id := range []string{"S1", "S1", "S1", "S2", "S2", "S3", "S4", "S4", "S4", "S4", "S4", "S4", "S4", "S4", "S4", "S4"} {
		if i > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"sale_external_id": %q, "product_id": "p%d"}`, id, i)
	}
	body.WriteString("]")
	lim := ingest.Limits{ChunkRecords: 2}
	recs, err := ingest.NewRecords(strings.NewReader(body.String()), ingest.JSON, "", imports.UploadShape(importing.Sales), lim)
	if err != nil {
		t.Fatal(err)
	}
	run := imports.Run{ID: "sales1", CompanyID: "acme", Entity: importing.Sales, Actor: "system", Source: "test", CorrelationID: "c1"}
	if _, err := imports.NewStore(pool, imports.TestKeys(t)).Stage(context.Background(), run, recs, lim); err != nil {
		t.Fatal(err)
	}
	// S3 and S4 share a chunk; S4, longer than the cap, is cut at 4 × 2.
	want := []chunkRow{{0, 0, 3, 3}, {1, 3, 2, 2}, {2, 5, 8, 8}, {3, 13, 3, 3}}
	if diff := cmp.Diff(want, chunks(t, pool, "sales1")); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}
