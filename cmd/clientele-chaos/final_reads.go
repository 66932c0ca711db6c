package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// readSyncQueues reads every message of the datasync datatargets into
// docs, one text per queue, and returns each queue's update_ids in
// message order, by the receiver's path of its outlet.
func readSyncQueues(a *api, base string, dts targets, docs map[string]string, problem func(string)) map[string][]string {
	updates := map[string][]string{}
	for datatype, path := range syncPaths {
		dt := dts.byPath[path].datatarget
		var all []string
		for {
			e := a.call(base, "GET", fmt.Sprintf("/api/datatargets/%s/retrieve/?after=%d&limit=1000", dt, len(all)), nil)
			var page struct{ Messages []json.RawMessage }
			if e.Status != 200 || json.Unmarshal(e.Answer, &page) != nil {
				problem(fmt.Sprintf("retrieve the datasync queue of %s: %d %s %s", datatype, e.Status, trim(e.Answer), e.Err))
				break
			}
			if len(page.Messages) == 0 {
				break
			}
			for _, m := range page.Messages {
				all = append(all, string(m))
				var v struct {
					UpdateID string `json:"update_id"`
				}
				_ = json.Unmarshal(m, &v)
				updates[path] = append(updates[path], v.UpdateID)
			}
		}
		docs["datasync queue of "+datatype] = strings.Join(all, "\n")
	}
	return updates
}

// logEntry is an outlet log entry, as the list answers it: its batch's
// first message (a datasync outlet's after_update taken to the number
// of the message after it) and size, its date (taken just before the
// request), how long the request took, its status and the receiver's
// http_status (0: no reply came).
type logEntry struct {
	N           int           `json:"entry_number"`
	Date        time.Time     `json:"date"`
	First       int           `json:"first"`
	Size        int           `json:"size"`
	Status      string        `json:"status"`
	HTTPStatus  int           `json:"http_status,omitempty"`
	RequestTime time.Duration `json:"request_time_ns"`
}

// readAttemptLogs reads every outlet's log, by the receiver's path of
// the outlet; updates are the datasync queues' update_ids
// (readSyncQueues), which place a datasync entry's batch.
func readAttemptLogs(a *api, base string, dts targets, updates map[string][]string, problem func(string)) map[string][]logEntry {
	out := map[string][]logEntry{}
	for _, path := range slices.Sorted(maps.Keys(dts.byPath)) {
		o := dts.byPath[path]
		number := map[string]int{"": 1} // after_update to the first message of a batch
		for i, u := range updates[path] {
			number[u] = i + 2
		}
		readPages(a, base, fmt.Sprintf("/api/datatargets/%s/outlets/%s/log/?limit=1000&order=ascending", o.datatarget, o.id), "entries", func(raw json.RawMessage) {
			var v struct {
				N           int     `json:"entry_number"`
				Date        string  `json:"date"`
				Size        int     `json:"batch_size"`
				First       int     `json:"first_message_number"`
				AfterUpdate *string `json:"after_update"`
				Status      string  `json:"status"`
				HTTPStatus  int     `json:"http_status"`
				RequestMS   int64   `json:"request_time_ms"`
			}
			_ = json.Unmarshal(raw, &v)
			date, err := time.Parse(time.RFC3339Nano, v.Date)
			if err != nil {
				problem(fmt.Sprintf("outlet %s log entry %d: date %q", path, v.N, v.Date))
			}
			le := logEntry{N: v.N, Date: date, First: v.First, Size: v.Size, Status: v.Status, HTTPStatus: v.HTTPStatus, RequestTime: time.Duration(v.RequestMS) * time.Millisecond}
			if slices.Contains(slices.Collect(maps.Values(syncPaths)), path) && v.First == 0 {
				after := ""
				if v.AfterUpdate != nil {
					after = *v.AfterUpdate
				}
				n, ok := number[after]
				if !ok {
					problem(fmt.Sprintf("outlet %s log entry %d: after_update %q is no message of the queue", path, v.N, after))
				}
				le.First = n
			}
			out[path] = append(out[path], le)
		}, problem)
	}
	return out
}

// readOutletLogs reads, for each datasync outlet, the raw request and
// reply of every attempt logged with them into docs, one text per
// attempt.
func readOutletLogs(a *api, base string, dts targets, docs map[string]string, problem func(string)) {
	for _, path := range syncPaths {
		o := dts.byPath[path]
		prefix := fmt.Sprintf("/api/datatargets/%s/outlets/%s/log/", o.datatarget, o.id)
		var numbers []int
		readPages(a, base, prefix+"?limit=100&order=ascending", "entries", func(raw json.RawMessage) {
			var le struct {
				N         int  `json:"entry_number"`
				Available bool `json:"http_request_available"`
			}
			_ = json.Unmarshal(raw, &le)
			docs[fmt.Sprintf("outlet %s log entry %d", path, le.N)] = string(raw)
			if le.Available {
				numbers = append(numbers, le.N)
			}
		}, problem)
		for _, n := range numbers {
			e := a.call(base, "GET", fmt.Sprintf("%s%d/", prefix, n), nil)
			var v struct {
				Entry struct {
					Request string `json:"http_request"`
					Reply   string `json:"http_reply"`
				}
			}
			if e.Status != 200 || json.Unmarshal(e.Answer, &v) != nil {
				problem(fmt.Sprintf("outlet %s log entry %d: %d %s %s", path, n, e.Status, trim(e.Answer), e.Err))
				continue
			}
			docs[fmt.Sprintf("outlet %s log entry %d", path, n)] = v.Entry.Request + "\n" + v.Entry.Reply
		}
	}
}

// readChanges reads the whole changes feed (GET /api/changes/, NDJSON)
// into docs; it counts the changes answered with data null, and lists
// the changes of a forgotten customer's stream (one that holds a
// CustomerForgotten) answered with data.
func readChanges(a *api, base string, docs map[string]string, problem func(string)) (null int, opened []string) {
	req, _ := http.NewRequest("GET", base+"/api/changes/", nil)
	req.Host = companyHost
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "application/x-ndjson")
	client := http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		problem("GET /api/changes/: " + err.Error())
		return 0, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		problem(fmt.Sprintf("GET /api/changes/: %d %v %s", resp.StatusCode, err, trim(body)))
		return 0, nil
	}
	docs["changes feed"] = string(body)
	type change struct {
		Position, Stream, Type string
		Data                   json.RawMessage
	}
	var all []change
	forgotten := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ch change
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			problem("changes feed: a line I cannot read: " + trim(sc.Bytes()))
			continue
		}
		all = append(all, ch)
		if ch.Type == "CustomerForgotten" {
			forgotten[ch.Stream] = true
		}
	}
	for _, ch := range all {
		switch {
		case string(ch.Data) == "null":
			null++
		case forgotten[ch.Stream]:
			opened = append(opened, fmt.Sprintf("%s %s of %s: %s", ch.Position, ch.Type, ch.Stream, trim(ch.Data)))
		}
	}
	return null, opened
}

// forgottenColumns are the columns of the export's customers file a
// forgotten customer may have a value in (docs/export.md).
var forgottenColumns = []string{"customer_id", "is_forgotten", "is_deleted", "version", "created_at", "updated_at", "doc"}

// readExport runs `clientele export --format ndjson` of the company into
// the run folder, reads every file into docs, and counts the customers
// exported in the forgotten form; personal lists those of them with a
// value in any other column, or a document with more than the form.
func readExport(ctx context.Context, c *cluster, docs map[string]string, problem func(string)) (forgotten int, personal []string) {
	out := filepath.Join(c.dir, "export")
	cmd := exec.CommandContext(ctx, c.bin, "export", "--company", "acme", "--format", "ndjson", "--out", out)
	cmd.Env = c.env
	if b, err := cmd.CombinedOutput(); err != nil {
		problem(fmt.Sprintf("clientele export: %v: %s", err, trim(b)))
		return 0, nil
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.ndjson"))
	if len(files) == 0 {
		problem("clientele export wrote no file in " + out)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			problem(err.Error())
			continue
		}
		docs["export "+filepath.Base(f)] = string(b)
		if filepath.Base(f) != "customers.ndjson" {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var row map[string]json.RawMessage
			if json.Unmarshal([]byte(line), &row) != nil {
				problem("export customers.ndjson: a line I cannot read: " + trim([]byte(line)))
				continue
			}
			if string(row["is_forgotten"]) != "true" {
				continue
			}
			forgotten++
			var doc map[string]json.RawMessage
			_ = json.Unmarshal(row["doc"], &doc)
			for col, v := range row {
				if !slices.Contains(forgottenColumns, col) && string(v) != "null" {
					personal = append(personal, fmt.Sprintf("%s: %s is %s", row["customer_id"], col, trim(v)))
				}
			}
			for key := range doc {
				if !slices.Contains([]string{"id", "is_deleted", "is_forgotten"}, key) {
					personal = append(personal, fmt.Sprintf("%s: the document has %s", row["customer_id"], key))
				}
			}
		}
	}
	return forgotten, personal
}
