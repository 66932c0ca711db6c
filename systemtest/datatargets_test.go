package systemtest_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// datatargetAnswer is a datatarget as a client reads it.
type datatargetAnswer struct {
	Datatarget struct {
		ID                string            `json:"id"`
		Name              string            `json:"name"`
		Enabled           bool              `json:"enabled"`
		LastMessageNumber int64             `json:"last_message_number"`
		Outlets           []json.RawMessage `json:"outlets"`
	} `json:"datatarget"`
}

// createDatatarget creates a messages datatarget with token.
func (e *env) createDatatarget(token, name string) string {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/datatargets/", bearer(token), jsonBody(map[string]string{"datatarget_type": "messages", "name": name}))
	res.wantStatus(e.t, http.StatusOK)
	var a datatargetAnswer
	res.decode(e.t, &a)
	return a.Datatarget.ID
}

func TestDatatargets(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)

	res := e.do(http.MethodPost, "/api/datatargets/", bearer(admin), jsonBody(map[string]string{"datatarget_type": "messages", "name": "ERP orders", "description": "to the ERP"}))
	res.wantStatus(t, http.StatusOK)
	var a datatargetAnswer
	res.decode(t, &a)
	id := a.Datatarget.ID
	golden(t, "datatarget", res.body, id, "<datatarget_id>")

	res = e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	golden(t, "datatarget", res.body, id, "<datatarget_id>")

	res = e.do(http.MethodPatch, "/api/datatargets/"+id, bearer(admin), jsonBody(map[string]any{"name": "ERP", "description": nil}))
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &a)
	if a.Datatarget.Name != "ERP" {
		t.Errorf("patched: %s", res.body)
	}
	other := e.createDatatarget(admin, "second")
	res = e.do(http.MethodGet, "/datatargets", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var list struct {
		Datatargets []struct {
			ID, Name, Description string
		} `json:"datatargets"`
	}
	res.decode(t, &list)
	if len(list.Datatargets) != 2 || list.Datatargets[0].ID != id || list.Datatargets[0].Name != "ERP" ||
		list.Datatargets[0].Description != "to the ERP" || list.Datatargets[1].ID != other {
		t.Errorf("list: %s", res.body)
	}

	// Refusals.
	e.do(http.MethodPost, "/api/datatargets/", bearer(admin), jsonBody(map[string]string{"datatarget_type": "datasync", "name": "x"})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPost, "/api/datatargets/", bearer(admin), jsonBody(map[string]string{"datatarget_type": "queue", "name": "x"})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPost, "/api/datatargets/", bearer(admin), jsonBody(map[string]string{"datatarget_type": "messages"})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPost, "/api/datatargets/", bearer(admin), rawBody(`[`)).wantError(t, http.StatusBadRequest, "invalid_request")
	e.do(http.MethodGet, "/api/datatargets/nope/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodPatch, "/api/datatargets/nope/", bearer(admin), jsonBody(map[string]string{"name": "x"})).wantError(t, http.StatusNotFound, "not_found")
	globex := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(globex), host(globexHost)).wantError(t, http.StatusNotFound, "not_found")

	// A token without roles uses datatargets but does not configure them.
	integ := e.createIntegration(admin, "shop")
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integ}).AccessToken.Token
	e.do(http.MethodPost, "/api/datatargets/", bearer(bare), jsonBody(map[string]string{"datatarget_type": "messages", "name": "x"})).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPatch, "/api/datatargets/"+id+"/", bearer(bare), jsonBody(map[string]string{"name": "x"})).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(bare), jsonBody(map[string]any{"messages": []any{map[string]int{"a": 1}}})).wantStatus(t, http.StatusOK)
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(bare)).wantStatus(t, http.StatusOK)
}
