package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/internal/ingest"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// chunkedUploads stages uploads with the handler h points to, set once the
// server's pool exists: with small chunks, a short upload spans several.
type chunkedUploads struct{ h *imports.StageUploadHandler }

func (u chunkedUploads) Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
	return u.h.Handle(ctx, cmd)
}

// unknownFieldsEnv is a server that stages uploads in chunks of three
// records, with the import worker and every entity's projector running,
// and the acme admin's token.
func unknownFieldsEnv(t *testing.T) (*env, string) {
	t.Helper()
	h := new(imports.StageUploadHandler)
	e := newEnv(t, func(_ *api.Config, d *app.Application) { d.Commands.Uploads = chunkedUploads{h} })
	*h = imports.NewStageUploadHandler(e.pool, e.keys, ingest.Limits{ChunkRecords: 3})
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewShops(), retrievalproj.NewProducts(),
		retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys))
	e.runImports()
	return e, e.userToken(e.admin, acmeHost)
}

// uploadRun uploads body, waits for the run and the projections, and
// returns the run's answer.
func (e *env) uploadRun(token, path, body string, opts ...option) importAnswer {
	e.t.Helper()
	run := e.mustUpload(token, path, append([]option{rawBody(body)}, opts...)...)
	a, res := e.waitRun(token, run)
	if a.Import.State != "completed" {
		e.t.Fatalf("run: %s", res.body)
	}
	e.waitProjections()
	return a
}

// TestUnknownFieldsAreWarnings: for every entity, the records a shop
// plugin sends with fields of its own (store_id, mage_type, another
// company's OTHER__x, a key that looks like data) are imported with their
// known fields, and the run lists each ignored field once, counting the
// imported records that carried it across the run's chunks (three
// records each), with the first one's index; a key that looks like data
// is listed as (unnamed), never quoted. A record with a known field of a
// bad value is still rejected, naming the field, and its own unknown
// field (rejected_only) counts in no warning. The run's source is api.
func TestUnknownFieldsAreWarnings(t *testing.T) {
	e, token := unknownFieldsEnv(t)
	e.importAll(token, "/api/products/upload/", `[{"external_id": "P1", "price": 1000}]`)

	// Records 0 to 6 of each upload: 0 good with plugin fields; 1 bad with
	// its own unknown field; 2 good, none; 3 good (the second chunk), with
	// mage_type; 4 good, a key that looks like data; 5 good, store_id; 6
	// good (the third chunk), mage_type.
	plugin := `"store_id": 1, "mage_type": "simple", "OTHER__x": "y"`
	tests := []struct {
		entity, key, first string    // first: record 0's key
		records            [7]string // each without its closing brace
		badField           string
		stored             map[string]any // of record 0
		extra              []importing.Warning
	}{
		{
			entity: "customers", key: "external_id", first: "C0",
			records: [7]string{
				`{"external_id": "C0", "first_name": "Ann", ` + plugin,
				`{"external_id": "C1", "email": "not an address", "store_id": 1, "rejected_only": 1`,
				`{"external_id": "C2"`,
				`{"external_id": "C3", "mage_type": "x"`,
				`{"external_id": "C4", "ann@example.com Ann Smith": "x"`,
				`{"external_id": "C5", "store_id": 2`,
				`{"external_id": "C6", "mage_type": "x"`,
			},
			badField: "email", stored: map[string]any{"first_name": "Ann"},
		},
		{
			entity: "shops", key: "external_id", first: "S0",
			records: [7]string{
				`{"external_id": "S0", "name": "Main", ` + plugin,
				`{"external_id": "S1", "country": "XX", "store_id": 1, "rejected_only": 1`,
				`{"external_id": "S2"`,
				`{"external_id": "S3", "mage_type": "x"`,
				`{"external_id": "S4", "ann@example.com Ann Smith": "x"`,
				`{"external_id": "S5", "store_id": 2`,
				`{"external_id": "S6", "mage_type": "x"`,
			},
			badField: "country", stored: map[string]any{"name": "Main"},
		},
		{
			entity: "products", key: "external_id", first: "PR0",
			records: [7]string{
				`{"external_id": "PR0", "price": 500, "title": "Mug", "mage_child_ids": [1, 2], "my_configurable_min_price": "9.5", ` + plugin +
					`, "stock": [{"shop_id": "S0", "quantity": 2, "store_id": 1}], "versions": {"language": {"fi": {"title": "Muki", "store_id": 1}}}`,
				`{"external_id": "PR1", "price": "10.5", "store_id": 1, "rejected_only": 1`,
				`{"external_id": "PR2", "price": 500`,
				`{"external_id": "PR3", "price": 500, "mage_type": "x"`,
				`{"external_id": "PR4", "price": 500, "ann@example.com Ann Smith": "x"`,
				`{"external_id": "PR5", "price": 500, "store_id": 2, "versions": {"language": {"sv": {"title": "Mugg", "store_id": 2}}}`,
				`{"external_id": "PR6", "price": 500, "mage_type": "x"`,
			},
			badField: "price", stored: map[string]any{"title": "Mug", "price": float64(500)},
			extra: []importing.Warning{
				{Field: "mage_child_ids", Count: 1, FirstIndex: 0}, {Field: "my_configurable_min_price", Count: 1, FirstIndex: 0},
				{Field: "stock.store_id", Count: 1, FirstIndex: 0}, {Field: "versions.language.store_id", Count: 2, FirstIndex: 0},
			},
		},
		{
			entity: "events", key: "label", first: "E0",
			records: [7]string{
				`{"type": "MAIL_SUBSCRIBE", "date": "2025-03-01", "email": "e0@example.com", "mailing_lists": ["news"], "label": "E0", "can_email": false, ` + plugin,
				`{"type": "SENTIMENT", "date": "2025-03-01", "email": "e0@example.com", "label": "E1", "sentiment_value": "lots", "store_id": 1, "rejected_only": 1`,
				`{"type": "BROWSE", "date": "2025-03-01", "email": "e0@example.com", "label": "E2"`,
				`{"type": "BROWSE", "date": "2025-03-01", "email": "e0@example.com", "label": "E3", "mage_type": "x"`,
				`{"type": "BROWSE", "date": "2025-03-01", "email": "e0@example.com", "label": "E4", "ann@example.com Ann Smith": "x"`,
				`{"type": "BROWSE", "date": "2025-03-01", "email": "e0@example.com", "label": "E5", "store_id": 2`,
				`{"type": "BROWSE", "date": "2025-03-01", "email": "e0@example.com", "label": "E6", "mage_type": "x"`,
			},
			badField: "sentiment_value", stored: map[string]any{"type": "MAIL_SUBSCRIBE", "mailing_lists": []any{"news"}},
			extra: []importing.Warning{{Field: "can_email", Count: 1, FirstIndex: 0}},
		},
		{
			entity: "sales", key: "sale_external_id", first: "SA0",
			records: [7]string{
				`{"sale_external_id": "SA0", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "sale_shipping_method": "post", ` + plugin +
					`, "sale_rows": [{"product_id": "P1", "quantity": 1, "unit_price": 1000, "unit_price": 1000, "store_id": 1, "mage_type": "simple"},
						{"product_id": "P1", "quantity": 2, "unit_price": 1000, "store_id": 1}]`,
				`{"sale_external_id": "SA1", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "product_id": "P1", "quantity": "lots", "unit_price": 1000, "store_id": 1, "rejected_only": 1`,
				`{"sale_external_id": "SA2", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000`,
				`{"sale_external_id": "SA3", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000, "mage_type": "x"`,
				`{"sale_external_id": "SA4", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000, "ann@example.com Ann Smith": "x"`,
				`{"sale_external_id": "SA5", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000, "store_id": 2`,
				`{"sale_external_id": "SA6", "sale_date": "2025-03-01", "sale_email": "s0@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000, "mage_type": "x"`,
			},
			badField: "quantity", stored: map[string]any{"sale_shipping_method": "post"},
			// A row's field is one warning whatever the row, counted once
			// per record.
			extra: []importing.Warning{{Field: "sale_rows.mage_type", Count: 1, FirstIndex: 0}, {Field: "sale_rows.store_id", Count: 1, FirstIndex: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.entity, func(t *testing.T) {
			records := make([]string, len(tt.records))
			for i, r := range tt.records {
				records[i] = r + "}"
			}
			a := e.uploadRun(token, "/api/"+tt.entity+"/upload/", "["+strings.Join(records, ",\n")+"]")
			if a.Import.Source != "api" || a.Import.Accepted != 6 || a.Import.Rejected != 1 {
				t.Errorf("run: source %q, %d accepted, %d rejected; want api, 6 and 1", a.Import.Source, a.Import.Accepted, a.Import.Rejected)
			}
			if len(a.Import.Rejections) != 1 || a.Import.Rejections[0].Index != 1 || a.Import.Rejections[0].Field == nil ||
				*a.Import.Rejections[0].Field != tt.badField {
				t.Errorf("rejections %+v, want record 1's, naming %s", a.Import.Rejections, tt.badField)
			}
			want := append([]importing.Warning{
				{Field: "OTHER__x", Count: 1, FirstIndex: 0},
				{Field: "mage_type", Count: 3, FirstIndex: 0},
				{Field: "store_id", Count: 2, FirstIndex: 0},
				{Field: values.UnnamedField, Count: 1, FirstIndex: 4},
			}, tt.extra...)
			sortWarnings(want)
			if diff := cmp.Diff(want, a.Import.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}

			got := byKey(e.retrieveAll(token, tt.entity, withQuery("limit", "1000")).Items, tt.key)
			first := got[tt.first]
			if first == nil {
				t.Fatalf("record 0 not retrieved: %v", got)
			}
			for f, v := range tt.stored {
				if !cmp.Equal(first[f], v) {
					t.Errorf("record 0: %s = %v, want %v", f, first[f], v)
				}
			}
			for _, f := range []string{"store_id", "mage_type", "OTHER__x", "ACME__x"} {
				if _, ok := first[f]; ok {
					t.Errorf("record 0 holds the ignored %s: %v", f, first)
				}
			}
			if len(got) < 6 {
				t.Errorf("%d %s retrieved, want the 6 accepted: %v", len(got), tt.entity, got)
			}
		})
	}
}

// sortWarnings puts warnings in the run's order: by first index, then
// field.
func sortWarnings(w []importing.Warning) {
	for i := 1; i < len(w); i++ {
		for j := i; j > 0 && (w[j].FirstIndex < w[j-1].FirstIndex || w[j].FirstIndex == w[j-1].FirstIndex && w[j].Field < w[j-1].Field); j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
}

// TestUnknownFieldsCSV: a CSV upload is source api too, and its odd
// columns are warnings like JSON keys: a row field of a flat sale by its
// name, a product's nested column without its language code, a column
// whose name looks like data as (unnamed).
func TestUnknownFieldsCSV(t *testing.T) {
	e, token := unknownFieldsEnv(t)
	csv := withHeader("Content-Type", "text/csv")
	a := e.uploadRun(token, "/api/customers/upload/", "external_id;first_name;store_id;Ann Smith\nCSV0;Ann;1;x\nCSV1;Bob;;y\nCSV2;Cy;3;\nCSV3;Dee;4;z\n", csv)
	if a.Import.Source != "api" || a.Import.Accepted != 4 {
		t.Errorf("customers run: source %q, %d accepted; want api and 4", a.Import.Source, a.Import.Accepted)
	}
	// An empty cell sends no field.
	want := []importing.Warning{{Field: values.UnnamedField, Count: 3, FirstIndex: 0}, {Field: "store_id", Count: 3, FirstIndex: 0}}
	if diff := cmp.Diff(want, a.Import.Warnings); diff != "" {
		t.Errorf("customers warnings (-want +got):\n%s", diff)
	}
	if c := byExternalID(e.retrieveAll(token, "customers").Items)["CSV0"]; c == nil || c["first_name"] != "Ann" {
		t.Errorf("CSV0: %v", c)
	}

	a = e.uploadRun(token, "/api/products/upload/", "external_id,price,versions.language.fi.title,versions.language.fi.mage_type,mage_type\nCP0,100,Muki,x,y\nCP1,100,Muki,x,y\n", csv)
	want = []importing.Warning{{Field: "mage_type", Count: 2, FirstIndex: 0}, {Field: "versions.language.mage_type", Count: 2, FirstIndex: 0}}
	if diff := cmp.Diff(want, a.Import.Warnings); diff != "" || a.Import.Source != "api" {
		t.Errorf("products run source %q, warnings (-want +got):\n%s", a.Import.Source, diff)
	}

	a = e.uploadRun(token, "/api/sales/upload/",
		"sale_external_id,sale_date,sale_email,product_id,quantity,unit_price,store_id\nCS0,2025-03-01,a@example.com,CP0,1,100,1\nCS0,2025-03-01,a@example.com,CP1,2,100,1\nCS1,2025-03-01,a@example.com,CP0,x,100,1\n", csv)
	want = []importing.Warning{{Field: "store_id", Count: 2, FirstIndex: 0}}
	if diff := cmp.Diff(want, a.Import.Warnings); diff != "" || a.Import.Rejected != 1 {
		t.Errorf("sales run: %d rejected (want 1), warnings (-want +got):\n%s", a.Import.Rejected, diff)
	}
}

// TestUnknownFieldsBounded: a run lists at most importing.MaxWarnings
// fields, the first found, however many odd columns its records carry;
// every record is imported.
func TestUnknownFieldsBounded(t *testing.T) {
	e, token := unknownFieldsEnv(t)
	var records []string
	for r := range 4 {
		var odd strings.Builder
		for i := range 400 {
			fmt.Fprintf(&odd, `, "col%d_%03d": 1`, r, i)
		}
		records = append(records, fmt.Sprintf(`{"external_id": "B%d"%s}`, r, odd.String()))
	}
	a := e.uploadRun(token, "/api/customers/upload/", "["+strings.Join(records, ",")+"]")
	if a.Import.Accepted != 4 || len(a.Import.Warnings) != importing.MaxWarnings {
		t.Fatalf("%d accepted, %d warnings; want 4 and %d", a.Import.Accepted, len(a.Import.Warnings), importing.MaxWarnings)
	}
	if last := a.Import.Warnings[len(a.Import.Warnings)-1]; last != (importing.Warning{Field: "col2_199", Count: 1, FirstIndex: 2}) {
		t.Errorf("the last warning listed is %+v, want col2_199 of record 2: the first %d found", last, importing.MaxWarnings)
	}
}

// TestWarningsEmptyList: a run without ignored fields answers warnings
// as [], never null.
func TestWarningsEmptyList(t *testing.T) {
	e, token := unknownFieldsEnv(t)
	run := e.mustUpload(token, "/api/customers/upload/", rawBody(`[{"external_id": "N1"}]`))
	e.waitRun(token, run)
	res := e.do(http.MethodGet, "/api/imports/"+run+"/", bearer(token))
	if !strings.Contains(string(res.body), `"warnings":[]`) {
		t.Errorf("answer %s, want \"warnings\":[]", res.body)
	}
}
