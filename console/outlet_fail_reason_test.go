package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestFailReasonMaskedOnPages: an outlet whose URL carries a credential
// in its query fails to connect; the three pages that show its failure
// reason (the overview's failing outlets, the outlet's attempts, the
// attempt) show the URL masked to a staff user, whether the reason was
// written by the worker or stored in clear before it masked it, and an
// admin reads the credential in the attempt's raw request.
func TestFailReasonMaskedOnPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := e.adminPrincipal()
	d, err := e.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "ERP orders"})
	if err != nil {
		t.Fatal(err)
	}
	hookURL := "http://" + addr + "/hook?api_key=s3cret-key&region=eu-w3st"
	o, err := e.cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: d.ID, Spec: datatarget.OutletSpec{
		Type: "webhook", Request: datatarget.Request{URL: hookURL},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID,
		Messages: []json.RawMessage{json.RawMessage(`{"n": 1}`)}}); err != nil {
		t.Fatal(err)
	}
	e.deliver()
	e.waitFor("a refused attempt", `SELECT EXISTS (SELECT FROM outlet_log WHERE outlet_id = $1 AND fail_reason LIKE '%connection refused%')`, o.ID)

	outletPage := "/console/datatargets/" + d.ID + "/outlets/" + o.ID
	staff := e.client(acmeHost)
	staff.logIn(e.staff.Email, "")
	shown := func(when string) {
		t.Helper()
		for _, page := range []string{"/console/", outletPage, outletPage + "/log/1"} {
			_, body := staff.do(http.MethodGet, page, nil, nil)
			text := html.UnescapeString(body)
			if strings.Contains(text, "s3cret-key") || strings.Contains(text, "eu-w3st") {
				t.Errorf("%s: staff reads the credential on %s:\n%s", when, page, body)
			}
			if !strings.Contains(text, "/hook?api_key=****&region=****") || !strings.Contains(text, "connection refused") {
				t.Errorf("%s: %s shows no masked failure reason:\n%s", when, page, body)
			}
		}
	}
	shown("a reason the worker wrote")
	clear := `no reply: Post "` + hookURL + `": dial tcp ` + addr + `: connect: connection refused`
	if _, err := e.pool.Exec(ctx, `UPDATE outlet_log SET fail_reason = $1 WHERE outlet_id = $2`, clear, o.ID); err != nil {
		t.Fatal(err)
	}
	shown("a reason stored in clear")

	admin := e.client(acmeHost)
	admin.logIn(e.admin.Email, "")
	_, body := admin.do(http.MethodGet, outletPage+"/log/1", nil, nil)
	if text := html.UnescapeString(body); !strings.Contains(text, "POST /hook?api_key=s3cret-key&region=eu-w3st HTTP/1.1") {
		t.Errorf("an admin does not read the request as it would have been sent:\n%s", body)
	}
}
