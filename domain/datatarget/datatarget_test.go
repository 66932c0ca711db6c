package datatarget_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

var (
	now   = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	staff = access.Principal{CompanyID: "c1", UserID: "u1", Roles: []access.Role{access.RoleStaff}}
	bare  = access.Principal{CompanyID: "c1", TokenID: "t1", OwnerID: "integrations/i1"}
)

func code(err error) domain.Code { return domain.ErrorCode(err) }

func fields(err error) []string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return nil
	}
	var out []string
	for _, d := range de.Details {
		out = append(out, d.Field)
	}
	return out
}

func TestNew(t *testing.T) {
	d, err := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "  Orders  "}, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "Orders" || !d.Enabled || d.CreatedBy != "users/u1" || d.LastMessageNumber != 0 {
		t.Errorf("new datatarget %+v", d)
	}
	tests := []struct {
		name string
		p    access.Principal
		typ  datatarget.Type
		n    string
		want domain.Code
	}{
		{"no role", bare, datatarget.Messages, "x", domain.Forbidden},
		{"datasync without datatype", staff, datatarget.Datasync, "x", domain.Validation},
		{"unknown type", staff, "queue", "x", domain.Validation},
		{"no type", staff, "", "x", domain.Validation},
		{"no name", staff, datatarget.Messages, " ", domain.Validation},
		{"long name", staff, datatarget.Messages, strings.Repeat("n", 201), domain.Validation},
	}
	for _, tt := range tests {
		if _, err := datatarget.New(tt.p, "d1", datatarget.Spec{Type: tt.typ, Name: tt.n}, now); code(err) != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
}

func TestApplyPatch(t *testing.T) {
	d, _ := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "a", Description: "b"}, now)
	name, empty := "new", ""
	got, changed, err := d.Apply(staff, datatarget.Patch{Name: &name}, now.Add(time.Hour))
	if err != nil || !changed || got.Name != "new" || got.Description != "b" || !got.UpdatedAt.Equal(now.Add(time.Hour)) {
		t.Errorf("patch name: %+v %v %v", got, changed, err)
	}
	if _, changed, _ := d.Apply(staff, datatarget.Patch{}, now); changed {
		t.Error("an empty patch changed something")
	}
	if _, _, err := d.Apply(staff, datatarget.Patch{Name: &empty}, now); code(err) != domain.Validation {
		t.Errorf("empty name: %v", err)
	}
	if _, _, err := d.Apply(bare, datatarget.Patch{Name: &name}, now); code(err) != domain.Forbidden {
		t.Errorf("no role: %v", err)
	}
}

func TestCheckMessages(t *testing.T) {
	out, err := datatarget.CheckMessages([]json.RawMessage{json.RawMessage(`{ "a" : [1, 2] }`), json.RawMessage(` {"b":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(out[0]) != `{"a":[1,2]}` || string(out[1]) != `{"b":{}}` {
		t.Errorf("compacted %s %s", out[0], out[1])
	}
	if _, err := datatarget.CheckMessages(nil); code(err) != domain.Validation {
		t.Errorf("no messages: %v", err)
	}
	_, err = datatarget.CheckMessages([]json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`[1]`), json.RawMessage(`"x"`), json.RawMessage(`null`)})
	if code(err) != domain.Validation || strings.Join(fields(err), ",") != "messages[1],messages[2],messages[3]" {
		t.Errorf("non-objects: %v %v", err, fields(err))
	}
	if _, err := datatarget.CheckMessages(make([]json.RawMessage, datatarget.MaxPostMessages+1)); code(err) != domain.Validation {
		t.Errorf("too many: %v", err)
	}
}

func TestMessagesStream(t *testing.T) {
	s := datatarget.MessagesStream("c1", "0190abcd")
	if id, ok := datatarget.DatatargetOfMessagesStream(s); !ok || id != "0190abcd" {
		t.Errorf("%s: %q %v", s, id, ok)
	}
	for _, bad := range []string{"datatarget-c1-x", "dtmessages-", "dtmessages-c1-"} {
		if _, ok := datatarget.DatatargetOfMessagesStream(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
