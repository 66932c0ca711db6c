package console_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestSearchScanBound: a search on a field that few customers meet reads
// at most 50,000 customers a page, says how many it has read and offers
// to continue from there; continuing finds the rest, each match once. A
// search by identifier (an index) and the API's retrieval are not
// bounded. The company's 60,000 customers are written to the read model
// directly: importing them would take the test a minute.
func TestSearchScanBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	// Customers c00001 to c60001 of acme, c00020 deleted; Rare are
	// c00010, c00020, c50001, c50002 and c55000. globex has a Rare
	// customer too.
	_, err := e.pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
		SELECT $1, 'c' || lpad(i::text, 5, '0'), jsonb_build_object('id', 'c' || lpad(i::text, 5, '0'),
			'first_name', CASE WHEN i IN (10, 20, 50001, 50002, 55000) THEN 'Rare' ELSE 'Common' END,
			'email', 'p' || i || '@example.com'), i = 20, 1, now(), now()
		FROM generate_series(1, 60001) i
		UNION ALL SELECT $2, 'g00001', '{"id": "g00001", "first_name": "Rare"}', false, 1, now(), now()`, e.acme.ID, e.globex.ID)
	if err != nil {
		t.Fatal(err)
	}
	// c00020 is hidden, so c50001 is the 50,000th customer shown and
	// c50002 the 50,001st.
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	continueLink := regexp.MustCompile(`<a href="([^"]+)" id="continue">`)
	open := regexp.MustCompile(`href="/console/customers/([^"]+)">Open</a>`)

	var found []string
	path := "/console/customers?f=first_name&v=Rare"
	for _, want := range []struct {
		ids      []string
		searched string // "" on the last page
	}{
		{[]string{"c00010", "c50001"}, "50,000"},
		{[]string{"c50002", "c55000"}, ""},
	} {
		res, body := c.do(http.MethodGet, path, nil, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		var ids []string
		for _, m := range open.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		if strings.Join(ids, " ") != strings.Join(want.ids, " ") {
			t.Errorf("GET %s: customers %v, want %v", path, ids, want.ids)
		}
		found = append(found, ids...)
		m := continueLink.FindStringSubmatch(body)
		if want.searched == "" {
			if m != nil || strings.Contains(body, `id="next"`) {
				t.Errorf("GET %s: the last page offers more:\n%s", path, body)
			}
			break
		}
		if m == nil || !strings.Contains(body, "Searched "+want.searched+" customers so far") {
			t.Fatalf("GET %s: no continuation after %s customers:\n%s", path, want.searched, body)
		}
		path = html.UnescapeString(m[1])
		if !strings.Contains(path, "after=c50001") || !strings.Contains(path, "searched=50000") {
			t.Errorf("the continuation %s does not start after c50001, the last customer read", path)
		}
	}
	if strings.Join(found, " ") != "c00010 c50001 c50002 c55000" {
		t.Errorf("across the continuations: %v", found)
	}

	// A search by identifier is an index lookup: no bound, no continuation.
	_, body := c.do(http.MethodGet, "/console/customers?f=email&v=p55000@example.com", nil, nil)
	if !strings.Contains(body, `href="/console/customers/c55000">Open</a>`) || strings.Contains(body, `id="continue"`) {
		t.Errorf("the search by email does not find c55000 at once:\n%s", body)
	}

	// The API's retrieval keeps its pages: full but the last.
	status, answer := e.apiCall(e.apiToken(), http.MethodGet, "/api/data/customers/?first_name=Rare&limit=3", "")
	if status != http.StatusOK {
		t.Fatalf("retrieval: %d %s", status, answer)
	}
	for _, id := range []string{`"c00010"`, `"c50001"`, `"c50002"`} {
		if !strings.Contains(answer, id) {
			t.Errorf("retrieval's page lacks %s: %s", id, answer)
		}
	}
	if strings.Contains(answer, `"c55000"`) || strings.Contains(answer, "g00001") {
		t.Errorf("retrieval's page of 3 holds more: %s", answer)
	}
}
