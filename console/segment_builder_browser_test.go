package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/domain/importing"
)

// TestBrowserSegmentBuilder: from the Segments page, the builder
// previews a rule typed as JSON (the count of customers it holds for now
// and a sample, rendered by the server), shows a refused rule's message
// naming the bad part with the typed text kept, and creates the segment,
// sending the browser to its page (POST/redirect/GET).
func TestBrowserSegmentBuilder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email,city\nB-1,b1@example.com,Helsinki\nB-2,b2@example.com,Helsinki\nB-3,b3@example.com,Turku\n")
	e.waitCustomer(e.acme, "external_id", "B-3")
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")

	var size string
	var sample int
	run(t, ctx, "preview a rule",
		chromedp.Navigate(e.url(acmeHost, "/console/segments")),
		chromedp.Click(css("#new-segment")),
		chromedp.WaitVisible(css("#builder")),
		typeText(css("#name"), "Helsinki"),
		chromedp.SetValue(css("#rule"), `{"all": [{"field": "city", "eq": "Helsinki"}, {"field": "email", "exists": true}]}`),
		chromedp.Click(css("#preview")),
		chromedp.WaitVisible(css("#preview-result")),
		textInto(css("#preview-size"), &size),
		evalInto(`document.querySelectorAll("#sample tbody a.open").length`, &sample),
		shot("segment-builder"),
	)
	if size != "2" || sample != 2 {
		t.Errorf("the preview: %q customers, %d in the sample; want 2, 2", size, sample)
	}
	var refusal, kept string
	run(t, ctx, "a refused rule",
		chromedp.SetValue(css("#rule"), `{"all": [{"field": "city", "eq": "Helsinki"}, {"event": {"type": "BROWSE", "within_days": 0}}]}`),
		chromedp.Click(css("#preview")),
		chromedp.WaitVisible(css("#builder-error")),
		textInto(css("#builder-error"), &refusal),
		evalInto(`document.querySelector("#rule").value`, &kept),
	)
	if !strings.Contains(refusal, "within_days") || !strings.Contains(kept, `"within_days": 0`) {
		t.Errorf("the refusal %q, the rule kept %q", refusal, kept)
	}
	var heading, path string
	run(t, ctx, "create the segment",
		chromedp.SetValue(css("#rule"), `{"field": "city", "eq": "Helsinki"}`),
		chromedp.SetValue(css("#segment-key"), "helsinki"),
		chromedp.Click(css("#create")),
		chromedp.WaitVisible(css("#members")),
		textInto(css("#segment-name"), &heading),
		evalInto(`location.pathname`, &path),
	)
	if path != "/console/segments/helsinki" || !strings.HasPrefix(heading, "Helsinki") {
		t.Errorf("after creating: %s, titled %q", path, heading)
	}
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM segments WHERE company_id = $1`, e.acme.ID).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d segments (%v), want 1", n, err)
	}
}
