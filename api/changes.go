package api

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/readmodels"
)

// The feed of changes (GET /api/changes/, our addition): the company's
// event log in order, for auditors, as a page of JSON or as a stream of
// NDJSON that runs to the log's head in bounded memory. See
// docs/retrieval.md, "The company's changes".

// Limits of the JSON pages of changes.
const (
	changesDefaultLimit = 1000
	changesMaxLimit     = 10000
)

// ndjson is the media type of the streamed feed.
const ndjson = "application/x-ndjson"

// handleChanges serves GET /api/changes/: admins only.
func (s *Server) handleChanges(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := access.MayReadChanges(p); err != nil {
		return err
	}
	co, _ := companyOf(c)
	params, err := onlyParams(c.Request.URL, []string{"from", "since", "until", "type", "stream", "limit"})
	if err != nil {
		return err
	}
	q := readmodels.ChangesQuery{CompanyID: p.CompanyID, Types: params["type"], Stream: params.Get("stream")}
	if v, ok := params["from"]; ok {
		if q.After, ok = readmodels.ParsePosition(v[0]); !ok {
			return invalidParam("from", "must be a position of a change (tx:global, as the changes give it)")
		}
	}
	if q.Since, _, err = datetimeParam(params, "since", co.Location()); err != nil {
		return err
	}
	if q.Until, _, err = datetimeParam(params, "until", co.Location()); err != nil {
		return err
	}
	stream := strings.Contains(c.GetHeader("Accept"), ndjson)
	def := changesDefaultLimit
	if stream {
		def = 0 // to the head
	}
	if q.Limit, err = limitParam(params, def, changesMaxLimit); err != nil {
		return err
	}
	if stream {
		return s.streamChanges(c, q)
	}
	return s.pageChanges(c, q, params)
}

// pageChanges answers {"changes": [...], "next_url": "..."}, next_url
// when the page stopped at its limit. Each change is written as it is
// read; an error once the answer began breaks the connection, as
// writeRetrieval does.
func (s *Server) pageChanges(c *gin.Context, q readmodels.ChangesQuery, params url.Values) error {
	var w *bufio.Writer
	start := func() {
		c.Header("Content-Type", "application/json; charset=utf-8")
		c.Status(http.StatusOK)
		w = bufio.NewWriterSize(c.Writer, retrievalBuffer)
		_, _ = w.WriteString(`{"changes":[`)
	}
	next, more, err := s.changes.Each(c.Request.Context(), q, func(ch readmodels.Change) error {
		if w == nil {
			start()
		} else {
			_ = w.WriteByte(',')
		}
		_, err := w.Write(appendChange(w.AvailableBuffer(), ch))
		return err
	})
	if err != nil {
		return s.endStream(c, w, err)
	}
	if w == nil {
		start()
	}
	b := append(w.AvailableBuffer(), ']')
	if more {
		params.Set("from", next.String())
		b = append(b, `,"next_url":`...)
		b = appendJSONString(b, absoluteURL(c.Request, params))
	}
	_, _ = w.Write(append(b, '}'))
	_ = w.Flush()
	return nil
}

// streamChanges answers one change a line (NDJSON) up to the log's head
// as it was when the request came (or the limit), each line written as
// it is read: memory holds a page of the log, whatever the number of
// changes. Each write may take Config.WriteTimeout, not the whole answer.
func (s *Server) streamChanges(c *gin.Context, q readmodels.ChangesQuery) error {
	rc := http.NewResponseController(c.Writer)
	var w *bufio.Writer
	start := func() {
		c.Header("Content-Type", ndjson)
		c.Status(http.StatusOK)
		w = bufio.NewWriterSize(deadlineWriter{c.Writer, rc, s.cfg.WriteTimeout}, retrievalBuffer)
	}
	start()
	_, _, err := s.changes.Each(c.Request.Context(), q, func(ch readmodels.Change) error {
		b := appendChange(w.AvailableBuffer(), ch)
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return s.endStream(c, w, err)
	}
	_ = w.Flush()
	return nil
}

// endStream ends an answer that failed: answered as usual when nothing
// went out yet, else the connection is broken, so that the client sees a
// broken answer, never a short one that looks whole.
func (s *Server) endStream(c *gin.Context, w *bufio.Writer, err error) error {
	if c.Request.Context().Err() != nil {
		return nil // the client went away: nothing to answer
	}
	if w == nil || !c.Writer.Written() {
		c.Writer.Header().Del("Content-Type")
		return err
	}
	s.problem(c, err)
	panic(http.ErrAbortHandler)
}

// deadlineWriter moves the connection's write deadline before each write:
// a stream of any length goes out, but a client that stops reading is
// let go.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	n, err := d.w.Write(p)
	if err == nil {
		err = d.rc.Flush()
	}
	return n, err
}

// appendChange appends the JSON object of one change.
func appendChange(b []byte, ch readmodels.Change) []byte {
	b = append(b, `{"position":"`...)
	b = append(b, ch.Position.String()...)
	b = append(b, `","committed_at":"`...)
	b = append(b, timestampMicros(ch.CommittedAt)...)
	b = append(b, `","stream":`...)
	b = appendJSONString(b, ch.Stream)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, ch.Type)
	b = append(b, `,"actor":`...)
	b = appendJSONString(b, ch.Actor)
	b = append(b, `,"source":`...)
	b = appendJSONString(b, ch.Source)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, ch.RunID)
	b = append(b, `,"data":`...)
	if ch.Data == nil {
		b = append(b, "null"...)
	} else {
		b = appendDoc(b, ch.Data)
	}
	return append(b, '}')
}
