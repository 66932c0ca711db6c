package api

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/readmodels"
)

// TestWriteRetrieval checks the streamed answer against what
// encoding/json writes for the same page, and that an error once the
// answer has begun breaks the connection instead of ending a short page.
func TestWriteRetrieval(t *testing.T) {
	docs := []string{`{"id": "a", "tags": ["<b>"], "n": 1.50}`, `{"id": "b", "note": "x & y"}`}
	streamOf := func(docs []string, next string, failAfter int) pageStream {
		return func(each readmodels.DocFunc) (string, error) {
			for i, d := range docs {
				if i == failAfter {
					return "", errors.New("database gone")
				}
				if err := each([]byte(d)); err != nil {
					return "", err
				}
			}
			return next, nil
		}
	}
	raw := func(docs []string) []json.RawMessage {
		out := []json.RawMessage{}
		for _, d := range docs {
			out = append(out, json.RawMessage(d))
		}
		return out
	}
	s := &Server{log: slog.New(slog.DiscardHandler)}
	var stream pageStream
	engine := gin.New()
	engine.GET("/api/data/customers/", func(c *gin.Context) {
		if err := s.writeRetrieval(c, "customers", stream); err != nil {
			c.String(http.StatusInternalServerError, err.Error())
		}
	})
	srv := httptest.NewServer(engine)
	defer srv.Close()
	get := func() (*http.Response, []byte, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/data/customers/?limit=2&tags=a%26b", nil)
		req.Host = "acme.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}

	for _, tt := range []struct {
		name string
		docs []string
		next string
		want any
	}{
		{"last page", docs, "", gin.H{"customers": raw(docs)}},
		{"more follow", docs, "b", gin.H{"customers": raw(docs),
			"next_url": "http://acme.example.com/api/data/customers/?cursor=Yg&limit=2&tags=a%26b"}},
		{"empty", nil, "", gin.H{"customers": raw(nil)}},
	} {
		stream = streamOf(tt.docs, tt.next, -1)
		resp, got, err := get()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		want, _ := json.Marshal(tt.want)
		if resp.StatusCode != http.StatusOK || string(got) != string(want) {
			t.Errorf("%s: %d\n got %s\nwant %s", tt.name, resp.StatusCode, got, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", tt.name, ct)
		}
	}

	for _, failAfter := range []int{0, 1} {
		stream = streamOf(docs, "", failAfter)
		if resp, got, err := get(); err != nil || resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("error after %d documents, nothing sent yet: %v %s, want it answered", failAfter, err, got)
		}
	}
	big := []string{`{"note": "` + strings.Repeat("x", retrievalBuffer) + `"}`, docs[0]}
	stream = streamOf(big, "", 1)
	if _, got, err := get(); err == nil {
		t.Errorf("error after %d bytes were sent: the answer ended as if whole (%d bytes)", retrievalBuffer, len(got))
	}
}
