package console_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands/imports"
)

// TestUploadOfRemovedUserRefused: a console upload whose user is removed
// while its body streams is refused when the body ends, and stages
// nothing: the session's authority is checked at the effect, not only
// when the request began. (No command removes users yet; the test
// changes the read model as one would.)
func TestUploadOfRemovedUserRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	staging := make(chan struct{}, 1)
	e.staging.Store(&staging)
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	u, err := url.Parse(e.url(acmeHost, "/console/"))
	if err != nil {
		t.Fatal(err)
	}
	var cookie string
	for _, ck := range c.http.Jar.Cookies(u) {
		cookie += ck.Name + "=" + ck.Value
	}

	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	_ = w.WriteField("entity", "customers")
	part, err := w.CreateFormFile("file", "customers.csv")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(part, "external_id,email\n")
	for i := range 400 {
		fmt.Fprintf(part, "LATE-%d,late%d@example.com\n", i, i)
	}
	w.Close()
	body := form.String()

	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("POST /console/uploads HTTP/1.1\r\nHost: %s:%s\r\nCookie: %s\r\nSec-Fetch-Site: same-origin\r\nAccept: application/json\r\n"+
		"Content-Type: %s\r\nContent-Length: %d\r\n\r\n", acmeHost, e.port(), cookie, w.FormDataContentType(), len(body))
	// Up to the middle of the file's content, well past its header.
	half := strings.Index(body, "LATE-300,")
	if _, err := io.WriteString(conn, head+body[:half]); err != nil {
		t.Fatal(err)
	}
	// The request is in (its session was read, its staging begun)
	// before the user goes.
	select {
	case <-staging:
	case <-time.After(30 * time.Second):
		t.Fatal("the upload's staging did not begin")
	}
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM users WHERE id = $1`, e.admin.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, body[half:]); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("upload of a user removed meanwhile: %d %s, want 401", res.StatusCode, b)
	}
	var runs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_runs WHERE company_id = $1`, e.acme.ID).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Errorf("%d import runs; want none", runs)
	}
}

// signalingUploads tells a test, when it asks (env.staging), that a
// staging has begun.
type signalingUploads struct {
	app.Uploads
	e *env
}

func (u signalingUploads) Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
	if ch := u.e.staging.Load(); ch != nil {
		select {
		case *ch <- struct{}{}:
		default:
		}
	}
	return u.Uploads.Handle(ctx, cmd)
}
