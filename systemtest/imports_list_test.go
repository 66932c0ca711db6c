package systemtest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// importsPage is the answer of GET /api/imports/.
type importsPage struct {
	Imports []map[string]any `json:"imports"`
	NextURL string           `json:"next_url"`
}

// listImports follows next_url from path until the last page, and
// returns the run ids in order and the number of pages.
func (e *env) listImports(t *testing.T, token, path string, opts ...option) (ids []string, pages int) {
	t.Helper()
	for next := path; next != ""; pages++ {
		u, err := url.Parse(next)
		if err != nil {
			t.Fatal(err)
		}
		if pages > 0 && (u.Scheme != "http" || u.Host != acmeHost && u.Host != globexHost) {
			t.Errorf("next_url %q is not absolute on a company's host", next)
		}
		res := e.do(http.MethodGet, u.Path+"?"+u.RawQuery, append([]option{bearer(token)}, opts...)...)
		res.wantStatus(t, http.StatusOK)
		var p importsPage
		res.decode(t, &p)
		if p.Imports == nil {
			t.Fatalf("imports missing or null: %s", res.body)
		}
		for _, run := range p.Imports {
			ids = append(ids, run["run_id"].(string))
		}
		next = p.NextURL
		if pages > 100 {
			t.Fatal("next_url never ends")
		}
	}
	return ids, pages
}

// TestListImports: the company's runs, newest first, paged by limit and
// cursor; another company's never; each run as GET /api/imports/<id>/
// answers it, without warnings and rejections.
func TestListImports(t *testing.T) {
	e, _ := newImportEnv(t)
	token := e.userToken(e.admin, acmeHost)
	other := e.userToken(e.globexAd, globexHost)

	var runs []string
	for range 5 {
		runs = append(runs, e.mustUpload(token, "/api/customers/upload/", rawBody(`[{"id":"a"},{"bad":1,"shop_field":2}]`)))
		// Globex's runs interleave acme's: none may show in acme's pages.
		e.mustUpload(other, "/api/customers/upload/", host(globexHost), rawBody(`[{"id":"g"}]`))
	}
	details := map[string]json.RawMessage{}
	for _, run := range runs {
		_, res := e.waitRun(token, run)
		var a struct {
			Import json.RawMessage `json:"import"`
		}
		res.decode(t, &a)
		details[run] = a.Import
	}
	newestFirst := slices.Clone(runs)
	slices.Reverse(newestFirst)

	for _, tt := range []struct {
		name      string
		path      string
		wantPages int
	}{
		{"default limit", "/api/imports/", 1},
		{"two a page", "/api/imports/?limit=2", 3},
		{"one a page, other spelling", "/imports?limit=1", 5},
		{"exactly one page", "/api/imports?limit=5", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ids, pages := e.listImports(t, token, tt.path)
			if diff := cmp.Diff(newestFirst, ids); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			if pages != tt.wantPages {
				t.Errorf("%d pages, want %d", pages, tt.wantPages)
			}
		})
	}

	t.Run("each run as GET /api/imports/<id>/ has it", func(t *testing.T) {
		res := e.do(http.MethodGet, "/api/imports/", bearer(token))
		res.wantStatus(t, http.StatusOK)
		var p struct {
			Imports []map[string]any `json:"imports"`
		}
		res.decode(t, &p)
		if len(p.Imports) != len(runs) {
			t.Fatalf("%d runs listed, want %d", len(p.Imports), len(runs))
		}
		for _, got := range p.Imports {
			var want map[string]any
			if err := json.Unmarshal(details[got["run_id"].(string)], &want); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"warnings", "rejections", "next_url"} {
				if _, ok := got[k]; ok {
					t.Errorf("run %v has %s in the list", got["run_id"], k)
				}
				delete(want, k)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("run %v (-GET /api/imports/<id>/ +list):\n%s", got["run_id"], diff)
			}
			if got["state"] != "completed" || got["accepted"] != 1.0 || got["rejected"] != 1.0 || got["finished_at"] == nil {
				t.Errorf("run %v: want completed, 1 accepted, 1 rejected, finished", got)
			}
		}
	})

	t.Run("another company's runs", func(t *testing.T) {
		ids, _ := e.listImports(t, other, "/api/imports/?limit=2", host(globexHost))
		if len(ids) != 5 {
			t.Errorf("globex lists %d runs, want its 5", len(ids))
		}
		for _, id := range ids {
			if slices.Contains(runs, id) {
				t.Errorf("globex lists acme's run %s", id)
			}
		}
		// Acme's cursor on globex's host starts globex's list there, and
		// still lists only globex's runs.
		res := e.do(http.MethodGet, "/api/imports/?limit=1", bearer(token))
		var p importsPage
		res.decode(t, &p)
		u, err := url.Parse(p.NextURL)
		if err != nil || p.NextURL == "" {
			t.Fatalf("next_url %q", p.NextURL)
		}
		got, _ := e.listImports(t, other, "/api/imports/?"+u.RawQuery, host(globexHost))
		for _, id := range got {
			if slices.Contains(runs, id) {
				t.Errorf("globex lists acme's run %s through acme's cursor", id)
			}
		}
	})

	t.Run("bad parameters", func(t *testing.T) {
		for name, q := range map[string]string{
			"limit zero": "?limit=0", "limit too big": "?limit=10001", "limit word": "?limit=all",
			"bad cursor": "?cursor=!!!", "bad from": "?from=!!!", "unknown parameter": "?entity=customers",
		} {
			t.Run(name, func(t *testing.T) {
				e.do(http.MethodGet, "/api/imports/"+q, bearer(token)).wantError(t, http.StatusBadRequest, "invalid_request")
			})
		}
		e.do(http.MethodGet, "/api/imports/?limit=10000", bearer(token)).wantStatus(t, http.StatusOK)
	})

	t.Run("who may read", func(t *testing.T) {
		// A staff user's token reads the list, as it reads a run.
		e.do(http.MethodGet, "/api/imports/", bearer(e.userToken(e.staff, acmeHost))).wantStatus(t, http.StatusOK)
		// Scopes: one run's path reaches that run, not the list;
		// /api/imports/* reaches both.
		one := e.createToken(token, map[string]any{"scopes": []map[string]string{{"path": "/api/imports/" + runs[0] + "/"}}})
		e.do(http.MethodGet, "/api/imports/"+runs[0]+"/", bearer(one.AccessToken.Token)).wantStatus(t, http.StatusOK)
		e.do(http.MethodGet, "/api/imports/", bearer(one.AccessToken.Token)).wantError(t, http.StatusForbidden, "forbidden")
		all := e.createToken(token, map[string]any{"scopes": []map[string]string{{"method": "GET", "path": "/api/imports/*"}}})
		e.do(http.MethodGet, "/api/imports/", bearer(all.AccessToken.Token)).wantStatus(t, http.StatusOK)
		e.do(http.MethodGet, "/api/imports/").wantError(t, http.StatusUnauthorized, "unauthorized")
		e.do(http.MethodGet, "/api/imports/", bearer(other)).wantError(t, http.StatusUnauthorized, "unauthorized")
	})
}

// TestListImportsEmpty: a company without runs answers an empty list and
// no next_url.
func TestListImportsEmpty(t *testing.T) {
	e := newEnv(t)
	res := e.do(http.MethodGet, "/api/imports/", bearer(e.userToken(e.admin, acmeHost)))
	res.wantStatus(t, http.StatusOK)
	if got := string(res.body); got != `{"imports":[]}` {
		t.Errorf("answer %s, want {\"imports\":[]}", got)
	}
}
