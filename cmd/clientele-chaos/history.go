package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// entry is one request and its answer, as a client saw it: a line of
// history.jsonl.
type entry struct {
	Start   time.Time       `json:"start"`
	End     time.Time       `json:"end"`
	Client  string          `json:"client"`
	Op      string          `json:"op"` // upload, post, retrieve, query
	Node    string          `json:"node"`
	Status  int             `json:"status"` // 0: no answer (Err says why)
	Err     string          `json:"err,omitempty"`
	Retry   string          `json:"retry_after,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
	Answer  json.RawMessage `json:"answer,omitempty"`
}

// history appends entries to a JSON-lines file and keeps them for the
// checker.
type history struct {
	mu      sync.Mutex
	f       *os.File
	entries []entry
}

func newHistory(path string) (*history, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &history{f: f}, nil
}

func (h *history) add(e entry) {
	b, _ := json.Marshal(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, e)
	_, _ = h.f.Write(append(b, '\n'))
}

func (h *history) all() []entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]entry(nil), h.entries...)
}

func (h *history) close() error { return h.f.Close() }

// api calls the service as the company acme with a bearer token.
type api struct {
	token string
	http  http.Client
}

const companyHost = "acme.localhost"

// requestTimeout bounds every request: an answer later than this is a hang.
const requestTimeout = 20 * time.Second

// call makes one request to base and returns its entry (Request and
// Answer filled; the caller adds Client and Op).
func (a *api) call(base, method, path string, body []byte) entry {
	e := entry{Node: base, Start: time.Now()}
	if body != nil && json.Valid(body) {
		e.Request = json.RawMessage(body)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		e.Err, e.End = err.Error(), time.Now()
		return e
	}
	req.Host = companyHost
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		e.Err, e.End = err.Error(), time.Now()
		return e
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	e.End = time.Now()
	if err != nil {
		e.Err = err.Error()
		return e
	}
	e.Status, e.Retry = resp.StatusCode, resp.Header.Get("Retry-After")
	if json.Valid(b) {
		e.Answer = json.RawMessage(b)
	} else {
		e.Answer, _ = json.Marshal(string(b))
	}
	return e
}

// createToken makes an access token for the admin.
func createToken(base string) (string, error) {
	req, _ := http.NewRequest("POST", base+"/api/access-tokens/", nil)
	req.Host = companyHost
	req.SetBasicAuth(adminEmail, adminPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		AccessToken struct{ Token string } `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	return v.AccessToken.Token, nil
}
