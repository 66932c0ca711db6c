package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// progressRecorder records, in the tab's session storage (which outlives
// the navigation to the run's page), every value and visibility the
// upload form's progress bar takes: the attributes console.js sets
// (progress.value reflects as the value attribute).
const progressRecorder = `(function () {
  var bar = document.querySelector('#upload-form progress');
  if (!bar) { return false; }
  sessionStorage.setItem('upload-progress', '[]');
  new MutationObserver(function () {
    var seen = JSON.parse(sessionStorage.getItem('upload-progress'));
    seen.push({value: bar.value, hidden: bar.hidden});
    sessionStorage.setItem('upload-progress', JSON.stringify(seen));
  }).observe(bar, {attributes: true, attributeFilter: ['value', 'hidden']});
  return true;
})()`

// throttleUpload limits what the tab sends to bytesPerSecond, as a slow
// line would.
func throttleUpload(bytesPerSecond float64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{DownloadThroughput: -1, UploadThroughput: bytesPerSecond}},
		})
		return err
	})
}

// TestBrowserUploadProgress uploads a file over a slow line and
// sees the form's progress bar shown and moving through values between 0
// and 100 as the file goes, before the run's page opens.
func TestBrowserUploadProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// About 200 KB in 400 records: each carries a long field the entity
	// does not have (ignored, so the run stays cheap).
	var csv strings.Builder
	csv.WriteString("external_id,padding\n")
	pad := strings.Repeat("x", 500)
	for i := range 400 {
		fmt.Fprintf(&csv, "PR-%03d,%s\n", i, pad)
	}
	file := filepath.Join(t.TempDir(), "big.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")
	var installed bool
	run(t, ctx, "open the upload form",
		chromedp.Navigate(e.url(acmeHost, "/console/imports")),
		chromedp.WaitVisible(css("#upload-form")),
		chromedp.SetValue(css("#entity"), "customers"),
		chromedp.SetUploadFiles(css(`#upload-form input[type="file"]`), []string{file}),
		evalInto(progressRecorder, &installed),
	)
	if !installed {
		t.Fatal("the upload form has no progress bar")
	}
	// 200 KB at 100 KB/s: some two seconds of upload.
	var at string
	run(t, ctx, "upload over a slow line",
		throttleUpload(100_000),
		chromedp.Click(css("#upload-submit")),
		chromedp.WaitVisible(css("#run.state-completed")),
		locationInto(&at),
	)
	if !strings.Contains(at, "/console/imports/") {
		t.Fatalf("after the upload the page is %s, want the run's", at)
	}
	var seen []struct {
		Value  float64 `json:"value"`
		Hidden bool    `json:"hidden"`
	}
	run(t, ctx, "read the progress seen", evalInto(`JSON.parse(sessionStorage.getItem('upload-progress') || '[]')`, &seen))
	var between []float64
	last := -1.0
	for _, s := range seen {
		if s.Hidden {
			continue
		}
		if s.Value < last {
			t.Errorf("the progress went back from %v to %v: %+v", last, s.Value, seen)
		}
		last = s.Value
		if s.Value > 0 && s.Value < 100 {
			between = append(between, s.Value)
		}
	}
	if len(between) == 0 {
		t.Fatalf("the progress bar showed no value between 0 and 100 while the file went: %+v", seen)
	}
	t.Logf("progress seen: %v", between)
}
