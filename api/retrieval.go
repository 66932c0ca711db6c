package api

import (
	"bufio"
	"encoding/base64"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/readmodels"
)

// The retrieval endpoints (GET /api/data/<entity>/) share their query
// string: limit, a cursor, and equality filters on any field. This file
// reads it and writes the page with its next_url; each entity's handler
// only picks its read model and its answer key.

// reservedParams are the query parameters that are not filters. "from" is
// the cursor's name in the interface's other paged listings.
var reservedParams = map[string]bool{"limit": true, "cursor": true, "from": true, "access-token": true}

// maxFilters bounds the filters of one request: each is a condition of the
// query, and no client needs more.
const maxFilters = 50

// limitParam reads the limit parameter of a listing: def when it is
// absent, else a whole number from 1 to most (spaces around it allowed);
// anything else is a 400 naming limit.
func limitParam(params url.Values, def, most int) (int, error) {
	v, ok := params["limit"]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v[0]))
	if err != nil || n < 1 || n > most {
		return 0, invalidParam("limit", "must be an integer from 1 to %d", most)
	}
	return n, nil
}

// onlyParams parses the query string of a listing whose parameters are
// known: any other (access-token aside) is a 400 naming it, as an unknown
// body field is, since a filter misspelt would list everything.
func onlyParams(u *url.URL, known []string) (url.Values, error) {
	params, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "the query string is malformed: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if slices.Contains(known, name) || name == "access-token" {
			continue
		}
		list := strings.Join(known, ", ")
		if f := values.SafeName(name); f != "" {
			return nil, invalidParam(f, "is not a parameter of this endpoint (%s)", list)
		}
		return nil, domain.Errorf(domain.Invalid, "the query has a parameter that is none of this endpoint's (%s)", list)
	}
	return params, nil
}

// cursorParam reads the cursor of a listing's next page, given as cursor
// or as from: "" when there is none, a 400 when it is not one of ours.
func cursorParam(params url.Values) (string, error) {
	var after string
	for _, name := range []string{"cursor", "from"} {
		if v := params.Get(name); v != "" {
			c, err := decodeCursor(v)
			if err != nil || c == "" {
				return "", invalidParam(name, "is not a cursor of this endpoint; follow next_url")
			}
			after = c
		}
	}
	return after, nil
}

// retrievalQuery reads limit, cursor and filters from the request.
func retrievalQuery(r *http.Request, companyID string) (readmodels.PageQuery, error) {
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return readmodels.PageQuery{}, domain.Errorf(domain.Invalid, "the query string is malformed: %v", err)
	}
	q := readmodels.PageQuery{CompanyID: companyID}
	if q.Limit, err = limitParam(params, readmodels.DefaultLimit, readmodels.MaxLimit); err != nil {
		return q, err
	}
	for _, name := range []string{"cursor", "from"} {
		if v := params.Get(name); v != "" {
			if q.After, err = decodeCursor(v); err != nil {
				return q, invalidParam(name, "is not a cursor of this endpoint; follow next_url")
			}
		}
	}
	fields := make([]string, 0, len(params))
	for f := range params {
		if !reservedParams[f] && f != "" {
			fields = append(fields, f)
		}
	}
	// Sorted, so the same request is the same SQL.
	sort.Strings(fields)
	for _, f := range fields {
		for _, v := range params[f] {
			q.Filters = append(q.Filters, readmodels.Filter{Field: f, Value: v})
		}
	}
	if len(q.Filters) > maxFilters {
		return q, domain.Errorf(domain.Invalid, "at most %d filters are accepted, got %d", maxFilters, len(q.Filters))
	}
	return q, nil
}

func invalidParam(name, format string, args ...any) error {
	e := domain.Errorf(domain.Invalid, "query parameter %s "+format, append([]any{name}, args...)...)
	e.Details = []domain.FieldError{{Field: name, Reason: e.Message}}
	return e
}

// A cursor is the id of the last item of the previous page, encoded so
// that clients treat it as opaque and the encoding can change.
func encodeCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func decodeCursor(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return string(b), err
}

// pageStream reads a page, handing each document to each, and returns
// the cursor of the next page ("" on the last): a Retriever's Stream with
// its query.
type pageStream func(each readmodels.DocFunc) (next string, err error)

// retrievalBuffer is the size of the buffer between a page and the
// connection: what a request holds of the page, whatever its limit.
const retrievalBuffer = 64 << 10

// writeRetrieval answers {"<key>": [...], "next_url": "..."}, next_url
// only when another page follows, writing each document out as the
// database sends it: the stored JSON is written through as encoding/json
// would write it (appendDoc), not decoded and encoded again, and the page
// is never held whole, so that PostgreSQL, the server and the client work
// on a page at once (docs/benchmarks.md, "Issue 15: paging"). An error
// before the first retrievalBuffer bytes went out is answered as usual;
// one after (the database gone mid-page) aborts the response, so that the
// client sees a broken connection, not a short page.
func (s *Server) writeRetrieval(c *gin.Context, key string, stream pageStream) error {
	// Writes to w fail only when the client went away, and then w keeps
	// failing: each document's write stops the page, the others need no
	// check.
	var w *bufio.Writer
	var sendErr error
	// A page is written as the client reads it, which may take minutes:
	// its credential is checked again while it is (authority.go).
	auth := s.authorityOf(c)
	start := func() {
		c.Header("Content-Type", "application/json; charset=utf-8")
		c.Status(http.StatusOK)
		w = bufio.NewWriterSize(c.Writer, retrievalBuffer)
		b := append(w.AvailableBuffer(), '{')
		b = appendJSONString(b, key)
		_, _ = w.Write(append(b, ':', '['))
	}
	next, err := stream(func(doc []byte) error {
		if err := auth.due(); err != nil {
			return err
		}
		if w == nil {
			start()
		} else {
			_ = w.WriteByte(',')
		}
		_, sendErr = w.Write(appendDoc(w.AvailableBuffer(), doc))
		return sendErr
	})
	switch {
	case sendErr != nil:
		return nil // the client went away: nothing to answer, nothing wrong here
	case err != nil && (w == nil || !c.Writer.Written()):
		return err // nothing sent yet: answered as usual
	case err != nil:
		s.problem(c, err)
		panic(http.ErrAbortHandler)
	}
	if w == nil {
		start()
	}
	b := append(w.AvailableBuffer(), ']')
	if next != "" {
		b = append(b, `,"next_url":`...)
		b = appendJSONString(b, nextURL(c.Request, encodeCursor(next)))
	}
	_, _ = w.Write(append(b, '}'))
	_ = w.Flush()
	return nil
}

// nextURL is the absolute address of the next page: the request's own,
// with the new cursor. The scheme is the one the client used, which
// behind a TLS-terminating proxy only X-Forwarded-Proto knows; trusting it
// from anyone is harmless, since it only shapes the client's own link.
func nextURL(r *http.Request, cursor string) string {
	q := r.URL.Query()
	q.Del("from")
	q.Set("cursor", cursor)
	return absoluteURL(r, q)
}

// absoluteURL is the request's own address with the query q.
func absoluteURL(r *http.Request, q url.Values) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	if p := strings.ToLower(strings.TrimSpace(proto)); p == "http" || p == "https" {
		scheme = p
	}
	u := url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
	return u.String()
}
