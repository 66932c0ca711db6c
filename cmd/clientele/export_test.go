package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// exportedCustomer is a customers.parquet row as a reader of the file
// declares it: the columns by name, with their types.
type exportedCustomer struct {
	CustomerID  string     `parquet:"customer_id"`
	ExternalID  *string    `parquet:"external_id,optional"`
	Email       *string    `parquet:"email,optional"`
	FirstName   *string    `parquet:"first_name,optional"`
	BirthDate   *time.Time `parquet:"birth_date,optional,date"`
	DateJoined  *time.Time `parquet:"date_joined,optional,timestamp(microsecond)"`
	CanEmail    *bool      `parquet:"can_email,optional"`
	IsForgotten bool       `parquet:"is_forgotten"`
	IsDeleted   bool       `parquet:"is_deleted"`
	Version     int64      `parquet:"version"`
	CreatedAt   time.Time  `parquet:"created_at,timestamp(microsecond)"`
	Doc         string     `parquet:"doc,json"`
}

// exportedSale is a sales.parquet row: money as integers.
type exportedSale struct {
	SaleID    string     `parquet:"sale_id"`
	Total     *int64     `parquet:"sale_total,optional"`
	Revenue   int64      `parquet:"revenue"`
	SaleDate  *time.Time `parquet:"sale_date,optional,timestamp(microsecond)"`
	IsDeleted bool       `parquet:"is_deleted"`
}

// exportedSaleRow is a sale_rows.parquet row.
type exportedSaleRow struct {
	SaleID    string   `parquet:"sale_id"`
	RowNumber int64    `parquet:"row_number"`
	UnitPrice *int64   `parquet:"unit_price,optional"`
	Quantity  *float64 `parquet:"quantity,optional"`
}

func readParquet[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := parquet.NewGenericReader[T](f)
	defer r.Close()
	rows := make([]T, r.NumRows())
	if n, err := r.Read(rows); n != len(rows) {
		t.Fatalf("%s: read %d of %d rows: %v", path, n, len(rows), err)
	}
	return rows
}

func readNDJSON(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %d: %v", path, len(out)+1, err)
		}
		out = append(out, m)
	}
	return out
}

// TestExport imports the demo set (customers, products, events, sales),
// then changes one customer and forgets another, and exports the company
// with the real command: now and as of an instant between the two,
// in Parquet (read back by parquet-go's reader) and NDJSON. The files
// hold every record; the changed customer is as it was at each instant,
// the forgotten one forgotten at both (its key is gone); no scratch
// table is left behind.
func TestExport(t *testing.T) {
	url := pgtest.URL(t)
	getenv := env(map[string]string{"DATABASE_URL": url, "CLIENTELE_LOG_LEVEL": "warn", "CLIENTELE_DATA_DIR": t.TempDir()})
	mustRun(t, getenv, "company", "create", "acme")
	before := time.Now()
	set := newDemoSet(time.Now())
	for _, up := range []struct {
		entity  string
		records []map[string]any
	}{{"customers", set.Customers}, {"products", set.Products}, {"events", set.Events}, {"sales", set.Sales}} {
		b, err := json.Marshal(up.records)
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, getenv, "import", "--company", "acme", "--entity", up.entity, writeFile(t, up.entity+".json", string(b)))
	}
	changed, forgotten := set.Customers[0], set.Customers[1]
	between := time.Now()
	mustRun(t, getenv, "import", "--company", "acme", "--entity", "customers", writeFile(t, "change.json",
		`[{"external_id": "`+changed["external_id"].(string)+`", "first_name": "Renamed"},
		  {"external_id": "`+forgotten["external_id"].(string)+`", "is_forgotten": true}]`))

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	saleIDs := map[any]bool{}
	for _, s := range set.Sales {
		saleIDs[s["sale_external_id"]] = true
	}
	sales := len(saleIDs)

	check := func(t *testing.T, dir string, wantFirst string) {
		t.Helper()
		customers := readParquet[exportedCustomer](t, filepath.Join(dir, "customers.parquet"))
		if len(customers) != len(set.Customers) {
			t.Fatalf("%d customers, want %d", len(customers), len(set.Customers))
		}
		byExternal := map[string]exportedCustomer{}
		nForgotten := 0
		for _, c := range customers {
			if c.IsForgotten {
				nForgotten++
				if c.ExternalID != nil || c.Email != nil || c.FirstName != nil || strings.Contains(c.Doc, "@") {
					t.Errorf("forgotten customer exported with personal data: %+v", c)
				}
				continue
			}
			byExternal[*c.ExternalID] = c
		}
		if nForgotten != 1 {
			t.Errorf("%d forgotten customers, want 1", nForgotten)
		}
		c := byExternal[changed["external_id"].(string)]
		if c.FirstName == nil || *c.FirstName != wantFirst || c.Email == nil || *c.Email != changed["email"] {
			t.Errorf("changed customer exported as %+v, want first_name %q", c, wantFirst)
		}
		if c.BirthDate == nil || c.BirthDate.Format(time.DateOnly) != changed["birth_date"] {
			t.Errorf("birth_date %v, want %v", c.BirthDate, changed["birth_date"])
		}
		if c.DateJoined == nil || c.DateJoined.Format(time.RFC3339) != changed["date_joined"] {
			t.Errorf("date_joined %v, want %v", c.DateJoined, changed["date_joined"])
		}
		if c.CanEmail == nil || *c.CanEmail != changed["can_email"] {
			t.Errorf("can_email %v, want %v", c.CanEmail, changed["can_email"])
		}
		if c.CreatedAt.Before(before.Add(-time.Second)) || c.CreatedAt.After(between) {
			t.Errorf("created_at %v not within the import", c.CreatedAt)
		}
		if _, ok := byExternal[forgotten["external_id"].(string)]; ok {
			t.Errorf("the forgotten customer is exported by its external_id")
		}
		if got := readParquet[exportedSale](t, filepath.Join(dir, "sales.parquet")); len(got) != sales {
			t.Errorf("%d sales, want %d", len(got), sales)
		} else {
			var total int64
			for _, s := range got {
				total += s.Revenue
				if s.SaleDate == nil || s.Total == nil {
					t.Errorf("sale without a date or total: %+v", s)
					break
				}
			}
			if total <= 0 {
				t.Errorf("revenue %d", total)
			}
		}
		rows := readParquet[exportedSaleRow](t, filepath.Join(dir, "sale_rows.parquet"))
		if len(rows) < sales {
			t.Errorf("%d sale rows of %d sales", len(rows), sales)
		} else if rows[0].RowNumber != 1 || rows[0].UnitPrice == nil || rows[0].Quantity == nil {
			t.Errorf("first sale row %+v", rows[0])
		}
		for name, want := range map[string]int{"products": len(set.Products), "events": len(set.Events), "shops": 0, "campaigns": 0} {
			f, err := os.Open(filepath.Join(dir, name+".parquet"))
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			pf, err := parquet.OpenFile(f, st.Size())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if int(pf.NumRows()) != want {
				t.Errorf("%s: %d rows, want %d", name, pf.NumRows(), want)
			}
			f.Close()
		}
	}

	now := t.TempDir()
	out := mustRun(t, getenv, "export", "--company", "acme", "--format", "parquet", "--out", now)
	if !strings.Contains(out, "customers.parquet") || !strings.Contains(out, "records/s") {
		t.Errorf("export printed:\n%s", out)
	}
	t.Run("now", func(t *testing.T) { check(t, now, "Renamed") })
	past := t.TempDir()
	mustRun(t, getenv, "export", "--company", "acme", "--as-of", between.UTC().Format(time.RFC3339Nano), "--format", "parquet", "--out", past)
	t.Run("as of before the change", func(t *testing.T) { check(t, past, changed["first_name"].(string)) })

	empty := t.TempDir()
	mustRun(t, getenv, "export", "--company", "acme", "--as-of", before.Add(-time.Hour).UTC().Format(time.RFC3339), "--format", "parquet", "--out", empty)
	if n := len(readParquet[exportedCustomer](t, filepath.Join(empty, "customers.parquet"))); n != 0 {
		t.Errorf("as of before any import: %d customers", n)
	}

	nd := t.TempDir()
	mustRun(t, getenv, "export", "--company", "acme", "--as-of", between.UTC().Format(time.RFC3339Nano), "--format", "ndjson", "--out", nd)
	lines := readNDJSON(t, filepath.Join(nd, "customers.ndjson"))
	if len(lines) != len(set.Customers) {
		t.Errorf("%d NDJSON customers, want %d", len(lines), len(set.Customers))
	}
	found := false
	for _, l := range lines {
		if l["is_forgotten"] == true && (l["email"] != nil || l["external_id"] != nil) {
			t.Errorf("forgotten customer in NDJSON: %v", l)
		}
		if l["external_id"] == changed["external_id"] {
			found = true
			if l["first_name"] != changed["first_name"] || l["date_joined"] != changed["date_joined"] || l["birth_date"] != changed["birth_date"] {
				t.Errorf("NDJSON customer as of before the change: %v", l)
			}
		}
	}
	if !found {
		t.Errorf("the changed customer is not in the NDJSON export")
	}
	if n := len(readNDJSON(t, filepath.Join(nd, "events.ndjson"))); n != len(set.Events) {
		t.Errorf("%d NDJSON events, want %d", n, len(set.Events))
	}

	var schemas int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'scratch_%'`).Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 {
		t.Errorf("%d scratch schemas left", schemas)
	}
}
