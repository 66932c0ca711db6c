package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/commands"
)

// TestBrowserDatatargetMessages: a datatarget's page shows its newest
// messages first, 50 a page, each collapsed to one line until opened, so
// that 120 messages make a page of a screen or two, not thousands of
// pixels; a message stored with \u escapes shows its characters
// (Ääkkönen); Older and Newer pages follow.
func TestBrowserDatatargetMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dt, _ := e.webhookOutlet("Newsletter sign-ups", 120, 200)
	var msgs []json.RawMessage
	msgs = append(msgs, json.RawMessage(`{"name": "\u00c4\u00e4kk\u00f6nen", "city": "Jyv\u00e4skyl\u00e4", "lines": [1, 2, 3, 4, 5, 6, 7, 8]}`))
	if _, err := e.cmds.PostDatatargetMessages.Handle(context.Background(), commands.PostDatatargetMessages{
		Principal: e.adminPrincipal(), DatatargetID: dt, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")
	var first, heading, summary string
	var count int
	var height, openHeight float64
	var bodyVisible bool
	run(t, ctx, "open the datatarget",
		chromedp.Navigate(e.url(acmeHost, "/console/datatargets/"+dt)),
		chromedp.WaitVisible(css("#message-list")),
		textInto(css("#message-list li:first-child .number"), &first),
		textInto(css("#messages"), &heading),
		textInto(css("#message-list li:first-child summary"), &summary),
		evalInto(`document.querySelectorAll("#message-list details").length`, &count),
		evalInto(`document.documentElement.scrollHeight`, &height),
		evalInto(`document.querySelector("#message-list li:first-child pre").checkVisibility()`, &bodyVisible),
	)
	if first != "#121" || count != 50 || !strings.Contains(heading, "121 to 72 of 121") {
		t.Fatalf("first message %q, %d on the page, heading %q: want #121 first, 50, newest first", first, count, heading)
	}
	if bodyVisible || height > 3500 {
		t.Errorf("messages not collapsed: body visible %v, page %v px high", bodyVisible, height)
	}
	if !strings.Contains(summary, "Ääkkönen") || strings.Contains(summary, `\u00c4`) {
		t.Errorf("the collapsed line shows %q, want the name's characters", summary)
	}
	var body string
	run(t, ctx, "open the newest message",
		chromedp.Click(css("#message-list li:first-child summary")),
		chromedp.WaitVisible(css("#message-list li:first-child pre")),
		textInto(css("#message-list li:first-child pre"), &body),
		evalInto(`document.documentElement.scrollHeight`, &openHeight),
	)
	if !strings.Contains(body, `"name": "Ääkkönen"`) || !strings.Contains(body, `"city": "Jyväskylä"`) {
		t.Errorf("the opened message shows:\n%s", body)
	}
	if openHeight <= height {
		t.Errorf("opening a message did not show more (%v px, %v before)", openHeight, height)
	}
	var older, oldest string
	run(t, ctx, "page to older messages",
		chromedp.Click(css("#older")),
		chromedp.WaitVisible(css("#newer")),
		textInto(css("#message-list li:first-child .number"), &older),
		chromedp.Click(css("#older")),
		chromedp.WaitVisible(css("#newest")),
		textInto(css("#message-list li:last-child .number"), &oldest),
	)
	if older != "#71" || oldest != "#1" {
		t.Errorf("older pages start at %q and end at %q, want #71 and #1", older, oldest)
	}
	if err := chromedp.Do(ctx, chromedp.WaitNotPresent(css("#older"))); err != nil {
		t.Errorf("the oldest page offers older messages: %v", err)
	}
}
