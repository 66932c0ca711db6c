package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/domain/importing"
)

// editorSession is an environment with the editor's customers and a tab
// logged in to acme's console as its staff.
func editorSession(t *testing.T) (*env, context.Context) {
	t.Helper()
	e := newEnv(t)
	editorFixture(t, e)
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")
	return e, ctx
}

// editorFixture is four customers of acme: E-1 and E-2 in Helsinki with
// BROWSE events of the last days (two for E-1, one for E-2), E-3 in
// Helsinki whose only BROWSE is 100 days old, E-4 in Turku with a BROWSE
// of yesterday. "City is Helsinki and a BROWSE within 30 days" holds
// for E-1 and E-2; with at least 2 of them, for E-1 alone.
func editorFixture(t *testing.T, e *env) {
	t.Helper()
	e.mustImport(e.acme, importing.Customers, "external_id,email,city\n"+
		"E-1,e1@example.com,Helsinki\nE-2,e2@example.com,Helsinki\nE-3,e3@example.com,Helsinki\nE-4,e4@example.com,Turku\n")
	e.waitCustomer(e.acme, "external_id", "E-4")
	day := func(n int) string {
		return time.Now().UTC().Add(-time.Duration(n) * 24 * time.Hour).Format(time.RFC3339)
	}
	e.mustImport(e.acme, importing.Events, "type,date,customer_id,path\n"+
		fmt.Sprintf("BROWSE,%s,E-1,/a\nBROWSE,%s,E-1,/b\nBROWSE,%s,E-2,/a\nBROWSE,%s,E-3,/a\nBROWSE,%s,E-4,/a\n", day(1), day(2), day(3), day(100), day(1)))
	e.waitCount(e.acme, "activity_events", 5)
}

// pick chooses value in the select element, as a person does: the
// value, then the change event the page listens to.
func pick(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](fmt.Sprintf(`(function () { var s = document.querySelector(%s); s.value = %s;
			s.dispatchEvent(new Event('change', {bubbles: true})); return s.value === %[2]s; })()`,
			strconv.Quote(sel), strconv.Quote(value)))(ctx, t)
		return err
	})
}

// counted waits until the live count shows size, and reads its text.
func counted(size string, text *string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := chromedp.WaitVisible(css(`#live-count[data-state="ok"][data-size="`+size+`"]`))(ctx, t); err != nil {
			return err
		}
		_, err := into(chromedp.Text(css("#live-count")), text)(ctx, t)
		return err
	})
}

// buildHelsinkiBrowsers builds "all of: city eq Helsinki, a BROWSE
// event within 30 days" in the editor, from the page's default rule.
func buildHelsinkiBrowsers() []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(css(`#rule-editor fieldset[data-path=""]`)),
		chromedp.Click(css(`[data-path="0"] [data-part=remove]`)),
		chromedp.Click(css(`fieldset[data-path=""] > .adds [data-add=field]`)),
		typeText(css(`[data-path="0"] [data-part=field]`), "city"),
		pick(`[data-path="0"] [data-part=op]`, "eq"),
		typeText(css(`[data-path="0"] [data-part=value]`), "Helsinki"),
		chromedp.Click(css(`fieldset[data-path=""] > .adds [data-add=event]`)),
		typeText(css(`[data-path="1"] [data-part=type]`), "BROWSE"),
		typeText(css(`[data-path="1"] [data-part=within_days]`), "30"),
	}
}

// TestBrowserSegmentEditorBuildsRule: the builder's editor builds a rule
// of a field condition and an event condition under "all" (the JSON
// text, folded under "Edit as JSON", follows it), its live count is the
// two customers the fixture made to match, and Create creates the
// segment with the rule built, as GET /api/segments/<key>/ answers it.
func TestBrowserSegmentEditorBuildsRule(t *testing.T) {
	t.Parallel()
	e, ctx := editorSession(t)

	var count string
	var folded bool
	steps := append([]chromedp.Action[chromedp.Void]{
		chromedp.Navigate(e.url(acmeHost, "/console/new-segment")),
		evalInto(`!document.querySelector("#rule-json").open`, &folded),
	}, buildHelsinkiBrowsers()...)
	steps = append(steps, counted("2", &count), shot("segment-editor"))
	run(t, ctx, "build a rule", steps...)
	if !folded || count != "2 customers now" {
		t.Errorf("the JSON folded %v; the count %q, want \"2 customers now\"", folded, count)
	}
	var path string
	run(t, ctx, "create the segment",
		typeText(css("#name"), "Helsinki browsers"),
		typeText(css("#segment-key"), "helsinki-browsers"),
		chromedp.Click(css("#create")),
		chromedp.WaitVisible(css("#members")),
		evalInto(`location.pathname`, &path),
	)
	if path != "/console/segments/helsinki-browsers" {
		t.Errorf("after creating: %s", path)
	}
	status, body := e.apiCall(e.apiToken(), http.MethodGet, "/api/segments/helsinki-browsers/", "")
	var got struct {
		Segment struct {
			Rule any `json:"rule"`
		} `json:"segment"`
	}
	if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil {
		t.Fatalf("GET the segment: %d %s (%v)", status, body, err)
	}
	var want any
	if err := json.Unmarshal([]byte(`{"all": [{"field": "city", "eq": "Helsinki"}, {"event": {"type": "BROWSE", "within_days": 30}}]}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Segment.Rule, want) {
		t.Errorf("the segment's rule %v, want %v", got.Segment.Rule, want)
	}
}

// TestBrowserSegmentEditorCountsLive: changing a condition (at least 2
// events instead of 1) changes the count shown, asked of the server
// without loading the page again (a value set on window survives), and
// so does negating it (the other Helsinki customer).
func TestBrowserSegmentEditorCountsLive(t *testing.T) {
	t.Parallel()
	e, ctx := editorSession(t)

	var before, after, negated, marker, set string
	steps := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(e.url(acmeHost, "/console/new-segment"))}, buildHelsinkiBrowsers()...)
	steps = append(steps, counted("2", &before),
		evalInto(`window.pageMarker = "same page"`, &set),
		typeText(css(`[data-path="1"] [data-part=min_count]`), "2"),
		counted("1", &after),
		chromedp.Click(css(`[data-path="1"] [data-part=not]`)),
		counted("2", &negated),
		evalInto(`String(window.pageMarker)`, &marker),
	)
	run(t, ctx, "change a condition", steps...)
	if before != "2 customers now" || after != "1 customer now" || negated != "2 customers now" || marker != "same page" {
		t.Errorf("counts %q then %q then %q, the page's marker %q", before, after, negated, marker)
	}
	var rule string
	run(t, ctx, "the JSON", evalInto(`document.querySelector("#rule").value`, &rule))
	if !strings.Contains(rule, `"not"`) || !strings.Contains(rule, `"min_count": 2`) {
		t.Errorf("the rule written: %s", rule)
	}
}

// TestBrowserSegmentEditorEventWhere: an event condition takes
// conditions on the event's own fields (+ Where): "path eq /b" leaves
// E-1 alone of the two Helsinki browsers, written into the rule as the
// event's where; a rule typed as JSON with a where shows it as
// conditions; removing it counts both again.
func TestBrowserSegmentEditorEventWhere(t *testing.T) {
	t.Parallel()
	e, ctx := editorSession(t)

	var both, narrowed, rule string
	steps := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(e.url(acmeHost, "/console/new-segment"))}, buildHelsinkiBrowsers()...)
	steps = append(steps, counted("2", &both),
		chromedp.Click(css(`[data-path="1"] [data-add=where]`)),
		typeText(css(`[data-path="1"] [data-where="0"] [data-part=field]`), "path"),
		typeText(css(`[data-path="1"] [data-where="0"] [data-part=value]`), "/b"),
		counted("1", &narrowed),
		evalInto(`document.querySelector("#rule").value`, &rule),
	)
	run(t, ctx, "a where on the event", steps...)
	if both != "2 customers now" || narrowed != "1 customer now" {
		t.Errorf("counts %q then %q", both, narrowed)
	}
	var written any
	if err := json.Unmarshal([]byte(rule), &written); err != nil {
		t.Fatalf("the rule written %q: %v", rule, err)
	}
	var want any
	if err := json.Unmarshal([]byte(`{"all": [{"field": "city", "eq": "Helsinki"},
		{"event": {"type": "BROWSE", "within_days": 30, "where": [{"field": "path", "eq": "/b"}]}}]}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(written, want) {
		t.Errorf("the rule written %v, want %v", written, want)
	}

	typed := `{"all": [{"field": "city", "eq": "Helsinki"}, {"event": {"type": "BROWSE", "within_days": 30, "where": [{"field": "path", "contains": "B"}]}}]}`
	var set bool
	var field, op, value, shown, again string
	run(t, ctx, "a where typed as JSON",
		evalInto(`(function () { var t = document.querySelector("#rule"); t.value = `+strconv.Quote(typed)+`;
			t.dispatchEvent(new Event("input")); return true; })()`, &set),
		chromedp.WaitVisible(css(`[data-path="1"] [data-where="0"] [data-part=field]`)),
		evalInto(`document.querySelector('[data-path="1"] [data-where="0"] [data-part=field]').value`, &field),
		evalInto(`document.querySelector('[data-path="1"] [data-where="0"] [data-part=op]').value`, &op),
		evalInto(`document.querySelector('[data-path="1"] [data-where="0"] [data-part=value]').value`, &value),
		counted("1", &shown),
		chromedp.Click(css(`[data-path="1"] [data-where="0"] [data-part=remove-where]`)),
		counted("2", &again),
	)
	if field != "path" || op != "contains" || value != "B" {
		t.Errorf("the typed where shown as %q %q %q, want path contains B", field, op, value)
	}
	if shown != "1 customer now" || again != "2 customers now" {
		t.Errorf("counts %q with the typed where, %q without it", shown, again)
	}
}

// TestBrowserSegmentEditorRefusal: a bad value (an event window of -1
// days) shows the server's refusal naming the bad part, in the live
// count's place, without loading the page.
func TestBrowserSegmentEditorRefusal(t *testing.T) {
	t.Parallel()
	e, ctx := editorSession(t)

	var refusal string
	run(t, ctx, "a bad window",
		chromedp.Navigate(e.url(acmeHost, "/console/new-segment")),
		chromedp.WaitVisible(css(`#rule-editor fieldset[data-path=""]`)),
		chromedp.Click(css(`fieldset[data-path=""] > .adds [data-add=event]`)),
		typeText(css(`[data-path="1"] [data-part=type]`), "BROWSE"),
		typeText(css(`[data-path="1"] [data-part=within_days]`), "-1"),
		chromedp.WaitVisible(css(`#live-count[data-state="error"]`)),
		textInto(css("#live-count"), &refusal),
	)
	if !strings.Contains(refusal, "rule.all[1].event.within_days") {
		t.Errorf("the refusal %q does not name rule.all[1].event.within_days", refusal)
	}
}

// TestBrowserSegmentBuilderWithoutScript: with JavaScript off, the
// builder is the JSON form it was: the rule's text shown (its disclosure
// open), no editor and no live count, and Preview renders the count on
// the server.
func TestBrowserSegmentBuilderWithoutScript(t *testing.T) {
	t.Parallel()
	e, ctx := editorSession(t)

	var size string
	run(t, ctx, "preview without a script",
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}),
		chromedp.Navigate(e.url(acmeHost, "/console/new-segment")),
		chromedp.WaitVisible(css("#rule")),
		chromedp.WaitNotVisible(css("#rule-editor")),
		chromedp.WaitNotVisible(css("#live-count")),
		typeText(css("#name"), "Helsinki"),
		chromedp.Click(css("#preview")),
		chromedp.WaitVisible(css("#preview-result")),
		textInto(css("#preview-size"), &size),
		chromedp.WaitVisible(css("#rule")),
	)
	if size != "3" {
		t.Errorf("the preview of city = Helsinki: %q customers, want 3", size)
	}
}
