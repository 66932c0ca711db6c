package systemtest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recordedAts returns the recorded_at of each event of a customer's
// history, in order.
func (e *env) recordedAts(token, id string) []time.Time {
	e.t.Helper()
	var h struct {
		Events []struct {
			RecordedAt time.Time `json:"recorded_at"`
		} `json:"events"`
	}
	res := e.do(http.MethodGet, "/api/customers/"+id+"/history/", bearer(token))
	res.wantStatus(e.t, http.StatusOK)
	res.decode(e.t, &h)
	out := make([]time.Time, len(h.Events))
	for i, ev := range h.Events {
		out[i] = ev.RecordedAt
	}
	for i := 1; i < len(out); i++ {
		if !out[i].After(out[i-1]) {
			e.t.Fatalf("events recorded at the same microsecond: %v", out)
		}
	}
	return out
}

// customerAt answers GET /api/data/customers/<id>/, as of at unless it is
// zero.
func (e *env) customerAt(token, id string, at time.Time, opts ...option) (map[string]any, response) {
	e.t.Helper()
	if !at.IsZero() {
		opts = append(opts, withQuery("as_of", at.UTC().Format(time.RFC3339Nano)))
	}
	res := e.do(http.MethodGet, "/api/data/customers/"+id+"/", append(opts, bearer(token))...)
	if res.status != http.StatusOK {
		return nil, res
	}
	var got struct {
		Customer map[string]any `json:"customer"`
	}
	res.decode(e.t, &got)
	return got.Customer, res
}

func TestCustomerAsOf(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	e.importCustomers(e.acme, `{"external_id": "C-1", "first_name": "Ann", "tags": ["vip"], "`+e.acme.ShortName+`__score": 1e3}`)
	ids := customerIDs(e.retrieve(admin).Customers)
	if len(ids) != 1 {
		t.Fatalf("imported: %v", ids)
	}
	ann := ids[0]
	first := e.retrieve(admin).Customers[0]
	e.importCustomers(e.acme, `{"external_id": "C-1", "first_name": "Anne", "tags.add": ["b2b"]}`)
	second := e.retrieve(admin).Customers[0]
	now, _ := e.customerAt(admin, ann, time.Time{})
	if diff := cmp.Diff(second, now); diff != "" {
		t.Errorf("the customer now is not as retrieval shows it (-retrieval +got):\n%s", diff)
	}
	e.importCustomers(e.acme, `{"external_id": "C-1", "is_deleted": true}`)
	at := e.recordedAts(admin, ann)
	if len(at) != 3 {
		t.Fatalf("history has %d events, want 3", len(at))
	}
	deleted := map[string]any{"id": ann, "is_deleted": true, "is_forgotten": false}

	for _, c := range []struct {
		name string
		at   time.Time
		want map[string]any // nil: not found
	}{
		{"before its creation", at[0].Add(-time.Microsecond), nil},
		{"at its creation", at[0], first},
		{"between two changes", at[1].Add(-time.Microsecond), first},
		{"at the second change", at[1], second},
		{"just before its deletion", at[2].Add(-time.Microsecond), second},
		{"at its deletion", at[2], deleted},
		{"after its deletion", at[2].Add(time.Hour), deleted},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, res := e.customerAt(admin, ann, c.at)
			if c.want == nil {
				res.wantError(t, http.StatusNotFound, "not_found")
				return
			}
			res.wantStatus(t, http.StatusOK)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("as of %s (-want +got):\n%s", c.at, diff)
			}
		})
	}
	// Now: deleted, as deleted (retrieval's list leaves it out).
	if got, res := e.customerAt(admin, ann, time.Time{}); !cmp.Equal(got, deleted) {
		t.Errorf("deleted customer now: %s", res.body)
	}

	// A datetime without zone is in the company's timezone (UTC here);
	// the other spellings of the path answer alike.
	res := e.do(http.MethodGet, "/data/customers/"+ann, bearer(admin), withQuery("as_of", at[1].UTC().Format("2006-01-02 15:04:05.999999")))
	res.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(res.body), `"Anne"`) {
		t.Errorf("as of a datetime without zone: %s", res.body)
	}
	e.do(http.MethodGet, "/api/data/customers/"+ann+"/", bearer(admin), withQuery("as_of", "yesterday")).wantError(t, http.StatusBadRequest, "invalid_request")
	e.do(http.MethodGet, "/api/data/customers/"+ann+"/", bearer(admin), withQuery("asof", "2025-01-01")).wantError(t, http.StatusBadRequest, "invalid_request")

	// Tenancy: another company's customer is not found, now or then.
	globex := e.userToken(e.globexAd, globexHost)
	for _, when := range []time.Time{{}, at[1]} {
		_, res := e.customerAt(globex, ann, when, host(globexHost))
		res.wantError(t, http.StatusNotFound, "not_found")
	}
	_, res = e.customerAt(admin, "nope", at[1])
	res.wantError(t, http.StatusNotFound, "not_found")
	// Authority as for retrieval: an integration's token reads it; a
	// token whose scopes name only the list does not.
	in := e.createIntegration(admin, "Shop")
	tok := e.createToken(admin, map[string]any{"owner_id": "integrations/" + in}).AccessToken.Token
	if _, res := e.customerAt(tok, ann, at[1]); res.status != http.StatusOK {
		t.Errorf("integration token: %d %s", res.status, res.body)
	}
	scoped := e.createToken(admin, map[string]any{"scopes": []map[string]string{{"method": "GET", "path": "/api/data/customers/"}}}).AccessToken.Token
	_, res = e.customerAt(scoped, ann, at[1])
	res.wantError(t, http.StatusForbidden, "forbidden")
}

func TestCustomerAsOfForgotten(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	e.importCustomers(e.acme, `{"external_id": "F-1", "email": "frida@example.com", "last_name": "Forgetmenot"}`)
	e.importCustomers(e.acme, `{"external_id": "F-1", "first_name": "Frida"}`)
	id := customerIDs(e.retrieve(admin).Customers)[0]
	before := e.recordedAts(admin, id)
	if got, _ := e.customerAt(admin, id, before[1]); got["first_name"] != "Frida" {
		t.Fatalf("before forgetting: %v", got)
	}
	e.importCustomers(e.acme, `{"external_id": "F-1", "is_forgotten": true}`)

	// Nothing personal at any instant, before the forgetting included:
	// the data key is gone.
	forgotten := map[string]any{"id": id, "is_deleted": false, "is_forgotten": true}
	for _, at := range append(before, time.Time{}, time.Now().Add(time.Hour)) {
		got, res := e.customerAt(admin, id, at)
		res.wantStatus(t, http.StatusOK)
		if diff := cmp.Diff(forgotten, got); diff != "" {
			t.Errorf("forgotten customer as of %v (-want +got):\n%s", at, diff)
		}
		for _, personal := range []string{"frida", "Forgetmenot", "Frida"} {
			if strings.Contains(string(res.body), personal) {
				t.Errorf("as of %v the answer holds %q: %s", at, personal, res.body)
			}
		}
	}
}
