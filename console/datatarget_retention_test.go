package console_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestDatatargetPageAfterPruning: once a datatarget's first messages are
// pruned after its retention, its page lists messages from the first one
// kept, where retrieval answers 410 below it, rather than an error page.
func TestDatatargetPageAfterPruning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	p := e.adminPrincipal()
	days := 1
	d, err := e.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "ERP orders",
		MessageRetentionDays: &days})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]json.RawMessage, 5)
	for i := range msgs {
		msgs[i] = json.RawMessage(`{"order": ` + itoa(i+1) + `}`)
	}
	if _, err := e.cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	// Two days later (no outlet: every message counts as delivered).
	dl, err := delivery.New(delivery.Config{Pool: e.pool, Keys: e.keys, Disable: e.cmds.DisableOutlet.BySystem, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if pruned, err := dl.Prune(ctx); err != nil || pruned.Messages != 4 {
		t.Fatalf("pruned %+v, %v", pruned, err)
	}
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	res, body := c.do(http.MethodGet, "/console/datatargets/"+d.ID, nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "#5") || strings.Contains(body, "#1<") || strings.Contains(body, "?before=5") {
		t.Fatalf("the datatarget page after pruning: %d\n%s", res.StatusCode, body)
	}
}
