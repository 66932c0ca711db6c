package imports_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
)

// TestImportCustomersDeleted: deletion is irreversible; a repeated
// is_deleted is accepted without effect; the customer can still be
// forgotten.
func TestImportCustomersDeleted(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"external_id": "A", "first_name": "Ann"}`)
	e.chunk(t, `{"external_id": "A", "first_name": "Changed", "is_deleted": "true"}`)
	accepted, rejections := e.chunk(t,
		`{"external_id": "A", "is_deleted": false}`,
		`{"external_id": "A", "first_name": "Back"}`,
		`{"external_id": "A", "is_deleted": true}`,
	)
	want := []importing.Rejection{
		{Index: 2, Field: "is_deleted", Reason: customer.ReasonDeleted},
		{Index: 3, Field: "is_deleted", Reason: customer.ReasonDeleted},
	}
	if accepted != 1 || !cmp.Equal(want, rejections) {
		t.Errorf("accepted %d, rejections %v; want 1, %v", accepted, rejections, want)
	}
	var types []string
	evs := e.events(t)
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if diff := cmp.Diff([]string{customer.TypeUpserted, customer.TypeDeleted}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(customerState{Version: 2, Deleted: true, HasExternalID: true, HasToken: true}, e.state(t, evs[0].ID)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	e.chunk(t, `{"external_id": "A", "is_forgotten": true}`)
	if s := e.state(t, evs[0].ID); !s.Forgotten || !s.Deleted || s.Version != 3 {
		t.Errorf("after forgetting: %+v", s)
	}
}

// TestImportCustomersForgotten: forgetting destroys the data key in the
// same transaction, keeps the identity hashes, and no later import of any
// of the person's identifiers recreates them.
func TestImportCustomersForgotten(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"external_id": "A", "email": "ann@example.com", "phone_number": "+358401234567", "first_name": "Ann"}`)
	e.chunk(t, `{"external_id": "A", "last_name": "Lee"}`, `{"email": "ann@example.com", "is_forgotten": true}`)
	id := e.events(t)[0].ID
	keys, err := e.keys.Load(context.Background(), e.pool, e.company.ID, []string{id})
	if err != nil || len(keys) != 0 {
		t.Fatalf("data key after forgetting: %d keys, %v", len(keys), err)
	}
	accepted, rejections := e.chunk(t,
		`{"external_id": "A", "first_name": "Ann"}`,
		`{"email": "ANN@example.com"}`,
		`{"external_id": "NEW", "phone_number": "+358 40 123 4567"}`,
		`{"external_id": "A", "is_forgotten": true}`,
	)
	want := []importing.Rejection{
		{Index: 3, Field: "external_id", Reason: customer.ReasonForgotten},
		{Index: 4, Field: "email", Reason: customer.ReasonForgotten},
		{Index: 5, Field: "phone_number", Reason: customer.ReasonForgotten},
	}
	if accepted != 1 || !cmp.Equal(want, rejections) {
		t.Errorf("accepted %d, rejections %v; want 1, %v", accepted, rejections, want)
	}
	evs := e.events(t)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Type)
		if ev.ID != id {
			t.Errorf("an event of another customer %s: the person was recreated", ev.ID)
		}
		if ev.Changes != nil {
			t.Errorf("%s/%d still opens after forgetting", ev.Stream, ev.Version)
		}
	}
	if diff := cmp.Diff([]string{customer.TypeUpserted, customer.TypeUpserted, customer.TypeForgotten}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The identities' keys stay, to refuse the person's return; the
	// token's is freed, so that the token matches nobody.
	if diff := cmp.Diff(customerState{Version: 3, Forgotten: true, HasExternalID: true, HasEmail: true, HasPhone: true}, e.state(t, id)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestImportCustomersCreatedAndForgottenInOneChunk: the key made for the
// new customer seals its first event and is destroyed with the chunk.
func TestImportCustomersCreatedAndForgottenInOneChunk(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"email": "ann@example.com", "first_name": "Ann"}`, `{"email": "ann@example.com", "is_forgotten": true}`)
	evs := e.events(t)
	if len(evs) != 2 || evs[0].Changes != nil || evs[1].Type != customer.TypeForgotten {
		t.Fatalf("events %+v", evs)
	}
	if _, rej := e.chunk(t, `{"email": "ann@example.com"}`); len(rej) != 1 || rej[0].Reason != customer.ReasonForgotten {
		t.Errorf("rejections %v, want the person recognised as forgotten", rej)
	}
}

// TestImportCustomersNoClearData: neither the events nor the write-side
// tables hold a clear identifier or name, in text or in bytes.
func TestImportCustomersNoClearData(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t,
		`{"external_id": "Zq-778201", "email": "Quentin.Zylberstein@example.com", "phone_number": "+358 40 7654321",
			"first_name": "Quentin", "last_name": "Zylberstein", "street_address": "Xyzzystreet 5", "ACME__nick": "qzyl"}`,
		`{"external_id": "Zq-778201", "city": "Vantaa-Qx"}`,
	)
	e.chunk(t, `{"phone_number": "+358407654321", "is_forgotten": true}`)
	values := []string{"Zq-778201", "quentin.zylberstein@example.com", "Quentin.Zylberstein", "+358407654321", "358407654321",
		"Quentin", "Zylberstein", "Xyzzystreet", "qzyl", "Vantaa-Qx"}
	for _, table := range []string{"events", "streams", "customer_states", "customer_keys"} {
		var dump string
		if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM `+table+` t`).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		dump = strings.ToLower(dump)
		if table == "events" && !strings.Contains(dump, "customerupserted") {
			t.Fatal("the dump of events does not show them: the search proves nothing")
		}
		for _, v := range values {
			v = strings.ToLower(v)
			if strings.Contains(dump, v) || strings.Contains(dump, hex.EncodeToString([]byte(v))) {
				t.Errorf("table %s holds %q in clear", table, v)
			}
		}
	}
}
