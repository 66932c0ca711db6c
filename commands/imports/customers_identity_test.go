package imports_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
)

// TestImportCustomersIdentity checks the resolution rules across chunks,
// through the stored registry: each chunk starts from the tables.
func TestImportCustomersIdentity(t *testing.T) {
	const (
		email = "ann@example.com"
		phone = "+358401234567"
	)
	type owners struct{ ExternalID, Email, Phone string }
	tests := []struct {
		name   string
		chunks [][]string
		// want gives the owners as the index, in creation order, of the
		// customer holding each identity; -1 for nobody.
		want      [3]int
		customers int
	}{
		{"email wins over phone; the phone key moves", [][]string{
			{`{"email": "ann@example.com"}`},
			{`{"phone_number": "+358401234567"}`},
			{`{"email": "ann@example.com", "phone_number": "+358401234567"}`},
		}, [3]int{-1, 0, 0}, 2},
		{"unknown external_id adopts the email's customer", [][]string{
			{`{"email": "ann@example.com", "first_name": "Ann"}`},
			{`{"external_id": "A", "email": "ann@example.com", "phone_number": "+358401234567"}`},
		}, [3]int{0, 0, 0}, 1},
		{"unknown external_id adopts the phone's customer", [][]string{
			{`{"phone_number": "+358401234567"}`},
			{`{"external_id": "A", "email": "ann@example.com", "phone_number": "+358401234567"}`},
		}, [3]int{0, 0, 0}, 1},
		{"an external_id never adopts a customer with another", [][]string{
			{`{"external_id": "B", "email": "ann@example.com"}`},
			{`{"external_id": "A", "email": "ann@example.com"}`},
		}, [3]int{1, 1, -1}, 2},
		{"a known external_id takes the email of another customer", [][]string{
			{`{"external_id": "A"}`, `{"email": "ann@example.com"}`},
			{`{"external_id": "A", "email": "ann@example.com"}`},
		}, [3]int{0, 0, -1}, 2},
		{"a changed email frees the old one", [][]string{
			{`{"external_id": "A", "email": "ann@example.com"}`},
			{`{"external_id": "A", "email": "ann.lee@example.com"}`},
		}, [3]int{0, -1, -1}, 1},
		{"an email sent as empty frees it", [][]string{
			{`{"external_id": "A", "email": "ann@example.com", "phone_number": "+358401234567"}`},
			{`{"external_id": "A", "email": "", "phone_number": ""}`},
		}, [3]int{0, -1, -1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newCustomerEnv(t)
			for _, c := range tt.chunks {
				if _, rej := e.chunk(t, c...); rej != nil {
					t.Fatalf("rejections: %v", rej)
				}
			}
			var ids []string
			for _, ev := range e.events(t) {
				if ev.Created {
					ids = append(ids, ev.ID)
				}
			}
			if len(ids) != tt.customers {
				t.Fatalf("%d customers, want %d", len(ids), tt.customers)
			}
			name := func(i int) string {
				if i < 0 {
					return ""
				}
				return ids[i]
			}
			want := owners{name(tt.want[0]), name(tt.want[1]), name(tt.want[2])}
			got := owners{e.owner(t, customer.ExternalID, "A"), e.owner(t, customer.Email, email), e.owner(t, customer.Phone, phone)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImportCustomersKeyMoves: the customer that loses a key keeps its
// stored phone (no event) but its state no longer holds the key.
func TestImportCustomersKeyMoves(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"email": "ann@example.com"}`, `{"phone_number": "+358401234567", "first_name": "Bo"}`)
	e.chunk(t, `{"email": "ann@example.com", "phone_number": "+358401234567"}`)
	evs := e.events(t)
	a, b := evs[0].ID, evs[1].ID
	if evs[2].ID != a {
		t.Fatalf("the third record went to %s, want the email's customer %s", evs[2].ID, a)
	}
	if diff := cmp.Diff(customerState{Version: 1, HasToken: true}, e.state(t, b)); diff != "" {
		t.Errorf("state of the customer losing its phone key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(customerState{Version: 2, HasEmail: true, HasPhone: true, HasToken: true}, e.state(t, a)); diff != "" {
		t.Errorf("state of the customer taking it (-want +got):\n%s", diff)
	}
	e.chunk(t, `{"phone_number": "+358401234567", "city": "Espoo"}`)
	if last := e.events(t)[3]; last.ID != a {
		t.Errorf("the phone now finds %s, want %s", last.ID, a)
	}
}
