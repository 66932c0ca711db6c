package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/importing"
)

// TestSegmentCountRequest: the builder's live count,
// POST /console/new-segment/count, answers a rule's size in JSON to a
// logged-in user's script from the console's own origin; a refused rule
// is the API's refusal in JSON (422, naming the bad part), text that is
// not JSON too (400); it is refused from another site (403) and without
// a session (401), as every console form.
func TestSegmentCountRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,city\nK-1,Helsinki\nK-2,Helsinki\nK-3,Turku\n")
	e.waitCustomer(e.acme, "external_id", "K-3")
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	script := map[string]string{"Sec-Fetch-Site": "same-origin", "Accept": "application/json"}
	count := func(c *client, rule string, h map[string]string) (int, map[string]any) {
		t.Helper()
		res, body := c.do(http.MethodPost, "/console/new-segment/count", url.Values{"rule": {rule}}, h)
		var out map[string]any
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%d, not JSON: %s", res.StatusCode, body)
		}
		return res.StatusCode, out
	}
	if status, out := count(c, `{"field": "city", "eq": "Helsinki"}`, script); status != http.StatusOK || out["size"] != 2.0 || out["text"] != "2 customers now" {
		t.Errorf("a rule: %d %v", status, out)
	}
	status, out := count(c, `{"all": [{"event": {"type": "BROWSE", "within_days": -1}}]}`, script)
	if msg, _ := out["error"].(map[string]any)["message"].(string); status != http.StatusUnprocessableEntity || !strings.Contains(msg, "rule.all[0].event.within_days") {
		t.Errorf("a bad window: %d %v", status, out)
	}
	if status, out := count(c, `{"field": `, script); status != http.StatusBadRequest || out["error"] == nil {
		t.Errorf("not JSON: %d %v", status, out)
	}
	if status, _ := count(c, `{"field": "city", "eq": "Helsinki"}`, map[string]string{"Sec-Fetch-Site": "cross-site", "Accept": "application/json"}); status != http.StatusForbidden {
		t.Errorf("from another site: %d, want 403", status)
	}
	if status, _ := count(e.client(acmeHost), `{"field": "city", "eq": "Helsinki"}`, script); status != http.StatusUnauthorized {
		t.Errorf("without a session: %d, want 401", status)
	}
}
