package datasync

import (
	"encoding/json"
	"testing"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
)

// TestDatasyncFeeds keeps the domain's list of available datatypes and
// the projector's feeds in step: a datatarget that could be created but
// never fed would stay empty for ever.
func TestDatasyncFeeds(t *testing.T) {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	p := NewDatasync(crypto.KeyStore{Keyring: kr}, postgres.EventLog{})
	for _, dt := range []datatarget.Datatype{datatarget.Customers, datatarget.Products, datatarget.Events, datatarget.Sales, datatarget.Shops} {
		if _, fed := p.feeds[dt]; fed != dt.Available() {
			t.Errorf("%s: fed %v, available %v", dt, fed, dt.Available())
		}
	}
}

// TestRestrict: a datatarget's fields keep id, is_deleted and is_forgotten
// besides, and a forgotten entity's message is the same bytes however it
// is made.
func TestRestrict(t *testing.T) {
	in := map[string]json.RawMessage{"id": json.RawMessage(`"c1"`), "is_deleted": json.RawMessage(`false`),
		"is_forgotten": json.RawMessage(`false`), "email": json.RawMessage(`"a@b.c"`), "city": json.RawMessage(`"Oulu"`)}
	got := Restrict(in, customersFeed{}.alwaysSent(), []string{"email", "phone_number"})
	if len(got) != 4 || got["city"] != nil || got["phone_number"] != nil || string(got["email"]) != `"a@b.c"` {
		t.Errorf("restricted: %s", got)
	}
	if got := Restrict(in, customersFeed{}.alwaysSent(), nil); len(got) != 5 {
		t.Errorf("every field: %s", got)
	}
	b, err := EncodeSyncMessage("42", datatarget.Customers, forgottenData("c1", true))
	if err != nil || string(b) != `{"update_id":"42","datatype":"customers","data":{"id":"c1","is_deleted":true,"is_forgotten":true}}` {
		t.Errorf("forgotten message %s %v", b, err)
	}
}
