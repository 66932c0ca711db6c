package console_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium, headless, through chromedp:
// one browser process for the package (started by the first test that
// needs it, closed by TestMain), one tab in its own browser context (its
// own cookies) per test. They never skip: without chromium they fail,
// saying what to install.

// chromiumPaths are where Debian's chromium package puts the browser.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/lib/chromium/chromium"}

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
	dir    string
}

func startBrowser() {
	path := ""
	if p, err := exec.LookPath("chromium"); err == nil {
		path = p
	}
	for _, p := range chromiumPaths {
		if path != "" {
			break
		}
		if _, err := os.Stat(p); err == nil {
			path = p
		}
	}
	if path == "" {
		browser.err = errors.New("Chromium is not installed (no chromium in PATH, nor /usr/bin/chromium): " +
			"install Debian's chromium package (apt-get install chromium); the console's browser tests need it and never skip")
		return
	}
	dir, err := os.MkdirTemp("", "clientele-chromium-")
	if err != nil {
		browser.err = err
		return
	}
	browser.dir = dir
	// chromedp's defaults (Puppeteer's) keep the tabs that are not in
	// front from being throttled: without them, the tests' tabs, all in
	// one browser, wait for frames and timers of a background page, and
	// each key typed takes tens of milliseconds.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		// Every company host is the test server, as DNS would have it.
		chromedp.Flag("host-resolver-rules", "MAP *.localhost 127.0.0.1"),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(ctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		browser.err = fmt.Errorf("start %s: %w", path, err)
		return
	}
	browser.ctx = ctx
	browser.cancel = func() { cancelBrowser(); cancelAlloc() }
}

func closeBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
}

// tab opens a tab with its own cookies for the test. On failure, a
// screenshot of the page is written to the test's artifact directory
// (go test -artifacts), else to a temporary directory, and named in the
// log.
func tab(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The tab lives as long as the context of its first run: one without
	// a timeout, so that the screenshot below can still be taken.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		sctx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		at, _ := chromedp.Run(sctx, chromedp.Location())
		png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Logf("no screenshot: %v", err)
			return
		}
		dir := failureDir(t)
		name := filepath.Join(dir, "failure.png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Logf("no screenshot: %v", err)
			return
		}
		t.Logf("screenshot of %s at failure: %s", at, name)
	})
	tctx, stop := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(stop)
	return tctx
}

// failureDir is where a failing test's screenshot goes: its artifact
// directory when go test keeps it (-artifacts), else a directory kept
// in the temporary directory.
func failureDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir, err := os.MkdirTemp("", "clientele-console-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		return os.TempDir()
	}
	return dir
}

// screenshots is where the tests write the pages' screenshots for
// docs/console.md, when CLIENTELE_CONSOLE_SCREENSHOTS names a directory
// (relative to the repository's root, e.g. docs/console).
func screenshots() string {
	dir := os.Getenv("CLIENTELE_CONSOLE_SCREENSHOTS")
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join("..", dir)
}

// shot writes screenshots of the page for the docs, when they are asked
// for: name.png 1280 px wide, as a desktop browser shows it, and
// name-390.png 390 px wide, as a phone does; each the whole page, but at
// most shotMaxHeight px of it, to keep the images small. The tab is 1280
// by 900 px again after.
func shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		dir := screenshots()
		if dir == "" {
			return nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, w := range []struct {
			width  int64
			suffix string
		}{{390, "-390"}, {1280, ""}} {
			if _, err := chromedp.EmulateViewport(w.width, 900)(ctx, t); err != nil {
				return err
			}
			height, err := chromedp.Evaluate[int64](`document.documentElement.scrollHeight`)(ctx, t)
			if err != nil {
				return err
			}
			if _, err := chromedp.EmulateViewport(w.width, min(max(height, 600), shotMaxHeight))(ctx, t); err != nil {
				return err
			}
			if _, err := chromedp.Evaluate[any](`window.scrollTo(0, 0)`)(ctx, t); err != nil {
				return err
			}
			png, err := chromedp.CaptureScreenshot()(ctx, t)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, name+w.suffix+".png"), png, 0o644); err != nil {
				return err
			}
		}
		_, err := chromedp.EmulateViewport(1280, 900)(ctx, t)
		return err
	})
}

// shotMaxHeight bounds the height of a screenshot for the docs.
const shotMaxHeight = 2000

// run runs steps in the tab and fails the test on error.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		at, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (page %s): %v", what, at, err)
	}
}

// css is a CSS selector (a plain string would be a DOM search, which
// also matches text).
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// browserLogIn logs in through the log-in page, as a person would.
func browserLogIn(t *testing.T, ctx context.Context, e *env, host, email, code string) {
	t.Helper()
	run(t, ctx, "log in as "+email,
		chromedp.Navigate(e.url(host, "/console/")),
		chromedp.WaitVisible(css("#login-form")),
		typeText(css("#email"), email),
		typeText(css("#password"), password),
		typeText(css("#totp"), code),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#who")),
	)
}

// typeText puts text into the element as an input method does: focused,
// then one Input.insertText, which fires the page's input events once.
// chromedp.SendKeys sends three key events a character, each answered
// after the renderer's next frame: about 50 ms a character, two seconds
// a log-in.
func typeText(sel chromedp.CSS, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if text == "" {
			return nil
		}
		if _, err := chromedp.Focus(sel)(ctx, t); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return err
	})
}

// textInto reads the text of the element into *v, as a step.
func textInto(sel chromedp.CSS, v *string) chromedp.Action[chromedp.Void] {
	return into(chromedp.Text(sel), v)
}

// locationInto reads the page's address into *v, as a step.
func locationInto(v *string) chromedp.Action[chromedp.Void] { return into(chromedp.Location(), v) }

// evalInto evaluates a JavaScript expression into *v, as a step.
func evalInto[T any](expr string, v *T) chromedp.Action[chromedp.Void] {
	return into(chromedp.Evaluate[T](expr), v)
}

func into[T any](a chromedp.Action[T], v *T) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		r, err := a(ctx, t)
		*v = r
		return err
	})
}

// dropFile drops a file from outside the page on the element, as a
// person dragging it from their file manager does (Input.dispatchDragEvent
// with the file, at the element's centre).
func dropFile(sel chromedp.CSS, file string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := chromedp.ScrollIntoView(sel)(ctx, t); err != nil {
			return err
		}
		box, err := chromedp.Dimensions(sel)(ctx, t)
		if err != nil {
			return err
		}
		var x, y float64
		for i := 0; i+1 < len(box.Content); i += 2 {
			x += box.Content[i] / 4
			y += box.Content[i+1] / 4
		}
		data := &input.DragData{Items: []*input.DragDataItem{}, Files: []string{file}, DragOperationsMask: 1}
		for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
			if _, err := cdp.Call(ctx, t, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: x, Y: y, Data: data}); err != nil {
				return fmt.Errorf("%s: %w", typ, err)
			}
		}
		return nil
	})
}
