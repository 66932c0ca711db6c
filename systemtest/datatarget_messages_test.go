package systemtest_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain/access"
)

// postAnswer is the answer of a post.
type postAnswer struct {
	FirstMessageNumber int64 `json:"first_message_number"`
	MessagesCount      int   `json:"messages_count"`
}

// retrieveAnswer is the answer of a retrieval; LastMessageNumber is nil
// when the key is absent.
type retrieveAnswer struct {
	LastMessageNumber *int64            `json:"last_message_number"`
	Messages          []json.RawMessage `json:"messages"`
}

func TestPostAndRetrieve(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id := e.createDatatarget(admin, "orders")
	path := "/api/datatargets/" + id

	// Nothing yet: no last_message_number.
	res := e.do(http.MethodGet, path+"/retrieve/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"messages":[]}` {
		t.Errorf("empty queue: %s", res.body)
	}

	res = e.do(http.MethodPost, path+"/post/", bearer(admin), rawBody(`{"messages": [{"order": "A-1", "lines": [1, 2]}, {"order": "A-2"}, {"order": "A-3"}]}`))
	res.wantStatus(t, http.StatusOK)
	var p postAnswer
	res.decode(t, &p)
	if p != (postAnswer{1, 3}) {
		t.Errorf("post: %s", res.body)
	}
	// A bare list is read too.
	res = e.do(http.MethodPost, path+"/post", bearer(admin), rawBody(` [{"order": "A-4"}]`))
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &p)
	if p != (postAnswer{4, 1}) {
		t.Errorf("bare list: %s", res.body)
	}

	// Read at once, in order.
	res = e.do(http.MethodGet, path+"/retrieve/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"last_message_number":4,"messages":[{"order":"A-1","lines":[1,2]},{"order":"A-2"},{"order":"A-3"},{"order":"A-4"}]}` {
		t.Errorf("retrieve: %s", res.body)
	}
	res = e.do(http.MethodGet, "/datatargets/"+id+"/retrieve", bearer(admin), withQuery("after", "1"), withQuery("limit", "2"))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"last_message_number":3,"messages":[{"order":"A-2"},{"order":"A-3"}]}` {
		t.Errorf("after 1, limit 2: %s", res.body)
	}
	res = e.do(http.MethodGet, path+"/retrieve/", bearer(admin), withQuery("after", "4"))
	if res.wantStatus(t, http.StatusOK); string(res.body) != `{"messages":[]}` {
		t.Errorf("after the last: %s", res.body)
	}
	var d datatargetAnswer
	e.do(http.MethodGet, path+"/", bearer(admin)).decode(t, &d)
	if d.Datatarget.LastMessageNumber != 4 {
		t.Errorf("last_message_number %d", d.Datatarget.LastMessageNumber)
	}

	// Refusals.
	for _, body := range []string{`{"messages": []}`, `{}`, `{"messages": [1]}`, `{"messages": [{"a": 1}, "x"]}`, `[null]`} {
		e.do(http.MethodPost, path+"/post/", bearer(admin), rawBody(body)).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	}
	e.do(http.MethodPost, path+"/post/", bearer(admin), rawBody(`{"messages": {}}`)).wantError(t, http.StatusBadRequest, "invalid_request")
	e.do(http.MethodPost, "/api/datatargets/nope/post/", bearer(admin), rawBody(`{"messages": [{}]}`)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/api/datatargets/nope/retrieve/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	for _, q := range [][2]string{{"after", "x"}, {"after", "-1"}, {"limit", "0"}, {"limit", "many"}} {
		e.do(http.MethodGet, path+"/retrieve/", bearer(admin), withQuery(q[0], q[1])).wantError(t, http.StatusBadRequest, "invalid_request")
	}
}

// TestConcurrentPosters: 16 clients post 50 times each at once; the
// numbers are 1..N, each once, and retrieval pages through them in order.
func TestConcurrentPosters(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	admin := e.userToken(e.admin, acmeHost)
	id := e.createDatatarget(admin, "orders")
	const clients, posts = 16, 50
	var mu sync.Mutex
	var answers []postAnswer
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range posts {
				size := 1 + (c+i)%3
				msgs := make([]map[string]int, size)
				for k := range msgs {
					msgs[k] = map[string]int{"client": c, "post": i, "k": k}
				}
				res := e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": msgs}))
				var a postAnswer
				if res.status != http.StatusOK || json.Unmarshal(res.body, &a) != nil || a.MessagesCount != size {
					t.Errorf("post: %d %s", res.status, res.body)
					return
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(answers, func(i, j int) bool { return answers[i].FirstMessageNumber < answers[j].FirstMessageNumber })
	next := int64(1)
	for _, a := range answers {
		if a.FirstMessageNumber != next {
			t.Fatalf("a post starts at %d, want %d", a.FirstMessageNumber, next)
		}
		next += int64(a.MessagesCount)
	}
	total := next - 1

	// Retrieval: every message once, in order, each post's messages
	// together.
	var after int64
	var seen int64
	for {
		res := e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(admin), withQuery("after", strconv.FormatInt(after, 10)), withQuery("limit", "500"))
		var r retrieveAnswer
		res.decode(t, &r)
		if len(r.Messages) == 0 {
			if r.LastMessageNumber != nil {
				t.Errorf("empty page with last_message_number %d", *r.LastMessageNumber)
			}
			break
		}
		seen += int64(len(r.Messages))
		after = *r.LastMessageNumber
		if after != seen {
			t.Fatalf("page ends at %d after %d messages", after, seen)
		}
	}
	if seen != total || total < clients*posts {
		t.Errorf("retrieved %d of %d", seen, total)
	}
}

// TestRetrieveScope: a token scoped to one datatarget's retrieve path
// reads that, and nothing else.
func TestRetrieveScope(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id, other := e.createDatatarget(admin, "one"), e.createDatatarget(admin, "other")
	for _, d := range []string{id, other} {
		e.do(http.MethodPost, "/api/datatargets/"+d+"/post/", bearer(admin), rawBody(`{"messages": [{"for": "`+d+`"}]}`)).wantStatus(t, http.StatusOK)
	}
	integ := e.createIntegration(admin, "erp")
	scoped := e.createToken(admin, map[string]any{
		"owner_id": "integrations/" + integ,
		"scopes":   []access.Scope{{Method: "GET", Path: "/api/datatargets/" + id + "/retrieve/"}},
	}).AccessToken.Token

	res := e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(scoped))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != fmt.Sprintf(`{"last_message_number":1,"messages":[{"for":"%s"}]}`, id) {
		t.Errorf("scoped retrieve: %s", res.body)
	}
	e.do(http.MethodGet, "/datatargets/"+id+"/retrieve", bearer(scoped), withQuery("after", "1")).wantStatus(t, http.StatusOK)
	for _, r := range [][2]string{
		{http.MethodGet, "/api/datatargets/" + other + "/retrieve/"},
		{http.MethodGet, "/api/datatargets/" + id + "/"},
		{http.MethodGet, "/api/datatargets/"},
		{http.MethodPost, "/api/datatargets/" + id + "/post/"},
		{http.MethodGet, "/api/integrations/"},
	} {
		e.do(r[0], r[1], bearer(scoped), rawBody(`{"messages": [{}]}`)).wantError(t, http.StatusForbidden, "forbidden")
	}
}
