package datatarget_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/internal/crypto"
)

// testKeyring seals the outlets' credentials of the package's tests.
var testKeyring = func() *crypto.Keyring {
	kr, err := crypto.NewKeyring(bytes.Repeat([]byte{7}, crypto.KeySize))
	if err != nil {
		panic(err)
	}
	return kr
}()

const (
	testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	testAPIKey = "key-4f1c9a7e2b"
	testBearer = "Bearer eyJhbGciOiJIUzI1NiJ9.payload.signature"
)

// sealedOutlet is an outlet with a secret and two headers.
func sealedOutlet(t *testing.T) datatarget.Outlet {
	t.Helper()
	d, _ := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	o, err := datatarget.NewOutlet(staff, d, "o1", datatarget.OutletSpec{Type: "webhook", Secret: testSecret,
		Request: datatarget.Request{URL: "https://example.com/hook", Headers: map[string]string{"X-Api-Key": testAPIKey, "Authorization": testBearer}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestOutletCredentialsSealed: the events that record an outlet hold its
// secret and header values sealed, never in clear, beside their hints;
// read with the keyring they give the outlet back; bound to their outlet,
// they do not open as another's; without a sealer the outlet holds the
// hints only.
func TestOutletCredentialsSealed(t *testing.T) {
	o := sealedOutlet(t)
	created, err := datatarget.NewOutletCreated(o, testKeyring)
	if err != nil {
		t.Fatal(err)
	}
	changed, err := datatarget.NewOutletChanged(o, now, testKeyring)
	if err != nil {
		t.Fatal(err)
	}
	for name, ev := range map[string]any{"OutletCreated": created, "OutletChanged": changed} {
		data, _ := json.Marshal(ev)
		for _, clear := range []string{testSecret, testAPIKey, testBearer, "MfKQ9r8G", "4f1c9a7e", "payload"} {
			if bytes.Contains(data, []byte(clear)) {
				t.Errorf("%s holds %q in clear: %s", name, clear, data)
			}
		}
		if !bytes.Contains(data, []byte(`"X-Api-Key":"key-******7e2b"`)) {
			t.Errorf("%s has no hint of X-Api-Key: %s", name, data)
		}
	}
	var ev datatarget.OutletCreated
	data, _ := json.Marshal(created)
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	got, err := ev.Outlet(o.CompanyID, testKeyring)
	if err != nil || got.Secret != testSecret || got.Request.Headers["X-Api-Key"] != testAPIKey || got.Request.Headers["Authorization"] != testBearer {
		t.Errorf("opened: %+v %v", got, err)
	}
	if got.Hints.Secret != "whse******************************LaSw" || got.Hints.Headers["Authorization"] != access.TokenHint(testBearer) {
		t.Errorf("hints %+v", got.Hints)
	}
	moved := ev
	moved.ID = "o2"
	if _, err := moved.Outlet(o.CompanyID, testKeyring); !errors.Is(err, crypto.ErrDecrypt) {
		t.Errorf("opened as another outlet's: %v", err)
	}
	hinted, err := ev.Outlet(o.CompanyID, nil)
	if err != nil || hinted.Secret != "" || len(hinted.Request.Headers) != 0 || !hinted.HasSecret() || hinted.Hints.Headers["X-Api-Key"] == "" {
		t.Errorf("not opened: %+v %v", hinted, err)
	}
	if r := hinted.RequestFor(admin); r.Headers["X-Api-Key"] != got.Hints.Headers["X-Api-Key"] {
		t.Errorf("an admin reads the headers %v", r.Headers)
	}
}

// TestOutletEventsInClearStillRead: the events written before credentials
// were sealed carry them in clear; they are read as they are, opened or
// stored, and what the read model answers from them is their hints.
func TestOutletEventsInClearStillRead(t *testing.T) {
	old := []byte(`{"id":"o1","datatarget_id":"d1","outlet_type":"webhook","request":{"url":"https://example.com/hook",
		"method":"POST","headers":{"X-Api-Key":"` + testAPIKey + `"},"format":"json","content":"\"{(data)}\""},
		"is_batched":false,"max_batch_size":1,"min_request_interval_ms":0,"secret":"` + testSecret + `","enabled":true,
		"created_at":"2026-11-20T10:00:00Z","created_by":"users/u1"}`)
	var ev datatarget.OutletCreated
	if err := json.Unmarshal(old, &ev); err != nil {
		t.Fatal(err)
	}
	o, err := ev.Outlet("c1", testKeyring)
	if err != nil || o.Secret != testSecret || o.Request.Headers["X-Api-Key"] != testAPIKey || o.Hints.Headers["X-Api-Key"] != "key-******7e2b" {
		t.Fatalf("opened: %+v %v", o, err)
	}
	stored := ev.Stored()
	if stored.Sealed != nil || stored.Secret != testSecret {
		t.Errorf("stored %+v", stored)
	}
	shown := stored.Outlet(datatarget.Outlet{ID: "o1"})
	if shown.Secret != "" || shown.Request.Headers != nil || shown.Hints.Secret != o.Hints.Secret || shown.Hints.Headers["X-Api-Key"] != "key-******7e2b" {
		t.Errorf("shown %+v", shown)
	}
	// Its next change seals them.
	url := "https://example.com/other"
	changed, _, err := o.Change(admin, datatarget.OutletPatch{Request: &datatarget.RequestPatch{URL: &url}})
	if err != nil {
		t.Fatal(err)
	}
	next, err := datatarget.NewOutletChanged(changed, now, testKeyring)
	if err != nil || next.Credentials == nil || next.Secret != "" || next.Request.Headers != nil {
		t.Errorf("the change: %+v %v", next, err)
	}
	if after, err := next.Apply(o, testKeyring); err != nil || after.Secret != testSecret || after.Request.Headers["X-Api-Key"] != testAPIKey {
		t.Errorf("after the change: %+v %v", after, err)
	}
}

// TestOutletPatchKeepsCredentialsGivenAsHints: a client that sends back
// the request it read (its headers in hint form), or the secret's hint,
// keeps the credentials; a new value replaces them; the hints of other
// values are refused as any bad value would be.
func TestOutletPatchKeepsCredentialsGivenAsHints(t *testing.T) {
	o := sealedOutlet(t)
	read := o.RequestFor(admin)
	url := "https://example.com/moved"
	hint := o.Hints.Secret
	got, changed, err := o.Change(admin, datatarget.OutletPatch{Secret: &hint,
		Request: &datatarget.RequestPatch{URL: &url, Headers: &read.Headers}})
	if err != nil || !changed || got.Request.URL != url || got.Secret != testSecret ||
		got.Request.Headers["X-Api-Key"] != testAPIKey || got.Request.Headers["Authorization"] != testBearer {
		t.Errorf("sent back as read: %+v %v %v", got, changed, err)
	}
	headers := map[string]string{"X-Api-Key": "key-new-value-1", "Authorization": read.Headers["Authorization"]}
	got, _, err = o.Change(admin, datatarget.OutletPatch{Request: &datatarget.RequestPatch{Headers: &headers}})
	if err != nil || got.Request.Headers["X-Api-Key"] != "key-new-value-1" || got.Request.Headers["Authorization"] != testBearer {
		t.Errorf("one replaced: %+v %v", got.Request.Headers, err)
	}
	wrong := strings.Replace(hint, "LaSw", "LaSx", 1)
	var de *domain.Error
	if _, _, err := o.Change(admin, datatarget.OutletPatch{Secret: &wrong}); !errors.As(err, &de) || de.Code != domain.Validation {
		t.Errorf("another hint as the secret: %v", err)
	}
}
