package systemtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands/imports"
)

// revocableToken creates a token of acme's admin and returns its id and
// value.
func (e *env) revocableToken() (id, value string) {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/access-tokens/", basic(e.admin.Email, password))
	res.wantStatus(e.t, http.StatusOK)
	var a tokenAnswer
	res.decode(e.t, &a)
	return a.AccessToken.ID, a.AccessToken.Token
}

// revoke revokes the token through the API, as another token of the
// admin.
func (e *env) revoke(id string) {
	e.t.Helper()
	e.do(http.MethodDelete, "/api/access-tokens/"+id+"/", bearer(e.userToken(e.admin, acmeHost))).wantStatus(e.t, http.StatusOK)
}

// TestRevokedTokenEndsStreamedPage: a retrieval page is written as the
// client reads it; a client reading a large page slowly whose token is
// revoked meanwhile gets the page cut off (a broken answer, not the rest
// of the page) within seconds of the revocation.
func TestRevokedTokenEndsStreamedPage(t *testing.T) {
	e := withCustomers(t)
	const customers, fieldBytes = 2000, 8 << 10 // a page of about 16 MB
	records := make([]customerRecord, customers)
	for i := range records {
		records[i] = customerRecord{id: fmt.Sprintf("c%05d", i), set: permissions(map[string]any{
			"email": fmt.Sprintf("c%d@example.com", i), "first_name": strings.Repeat("x", fieldBytes)})}
	}
	e.upsertCustomers(e.acme, records...)
	id, token := e.revocableToken()

	req, err := http.NewRequest(http.MethodGet, e.srv.URL+fmt.Sprintf("/api/data/customers/?limit=%d", customers), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = acmeHost
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	br := bufio.NewReaderSize(res.Body, 32<<10)
	if _, err := br.Peek(1); err != nil {
		t.Fatal(err)
	}
	e.revoke(id)
	revokedAt := time.Now()
	// The client reads on at its pace, 32 KiB every 10 ms (3 MiB/s): the
	// page, whole, would take five seconds more.
	var got int
	var readErr error
	buf := make([]byte, 32<<10)
	for {
		n, err := io.ReadFull(br, buf)
		got += n
		if err != nil {
			readErr = err
			break
		}
		time.Sleep(10 * time.Millisecond) // the slow client's pace, not a wait for the server
	}
	took := time.Since(revokedAt)
	t.Logf("the page ended %v after the revocation, after %d bytes (%v)", took.Round(time.Millisecond), got, readErr)
	if readErr == io.EOF || readErr == io.ErrUnexpectedEOF && got >= customers*fieldBytes {
		t.Fatalf("the whole page (%d bytes) was sent after its token was revoked", got)
	}
	if got >= customers*fieldBytes {
		t.Errorf("%d bytes were sent, the whole page", got)
	}
	if took > 10*time.Second {
		t.Errorf("the page ended %v after the revocation; the bound is seconds", took)
	}
}

// TestRevokedTokenEndsUpload: an upload whose token is revoked while its
// body streams is refused (401) when its body ends, and nothing of it is
// staged or imported.
func TestRevokedTokenEndsUpload(t *testing.T) {
	staging := make(chan struct{}, 1)
	e := newEnv(t, func(_ *api.Config, a *app.Application) {
		a.Commands.Uploads = signalingUploads{Uploads: a.Commands.Uploads, staging: staging}
	})
	id, token := e.revocableToken()
	conn := dial(t, e.listen())
	br := bufio.NewReader(conn)

	body := `[{"external_id": "late-1", "email": "late@example.com", "is_forgotten": false}]`
	head := fmt.Sprintf("POST /api/customers/upload/ HTTP/1.1\r\nHost: acme.localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		token, len(body))
	half := len(body) / 2
	if _, err := io.WriteString(conn, head+body[:half]); err != nil {
		t.Fatal(err)
	}
	// The request is in (authenticated, its staging begun) before its
	// token is revoked.
	select {
	case <-staging:
	case <-time.After(30 * time.Second):
		t.Fatal("the upload's staging did not begin")
	}
	e.revoke(id)
	if _, err := io.WriteString(conn, body[half:]); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err != nil || res.StatusCode != http.StatusUnauthorized || !strings.Contains(eb.Error.Message, "revoked") {
		t.Fatalf("upload after its token was revoked: %d %s; want 401 saying it was revoked", res.StatusCode, b)
	}
	var runs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_runs WHERE company_id = $1`, e.acme.ID).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Errorf("%d import runs; want none", runs)
	}
}

// signalingUploads tells staging when a staging begins.
type signalingUploads struct {
	app.Uploads
	staging chan<- struct{}
}

func (u signalingUploads) Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
	select {
	case u.staging <- struct{}{}:
	default:
	}
	return u.Uploads.Handle(ctx, cmd)
}
