package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/values"
)

// handleGetCustomer serves GET /api/data/customers/<id>/ (our addition):
// {"customer": {...}}, the customer as retrieval shows it now, or with
// ?as_of=<datetime> as it would have shown it then, built from the log
// (docs/retrieval.md, "One customer, now or as of a time"). A deleted
// customer is shown as deleted (id, is_deleted, is_forgotten); one that
// did not exist is 404. Whoever retrieves customers may ask.
func (s *Server) handleGetCustomer(c *gin.Context) error {
	p, _ := principalOf(c)
	co, _ := companyOf(c)
	params, err := onlyParams(c.Request.URL, []string{"as_of"})
	if err != nil {
		return err
	}
	at, ok, err := datetimeParam(params, "as_of", co.Location())
	if err != nil {
		return err
	}
	ctx, id := c.Request.Context(), c.Param("id")
	var doc []byte
	if ok {
		doc, err = s.customerAsOf.AsOf(ctx, p.CompanyID, id, at)
	} else {
		doc, err = s.customerAsOf.Now(ctx, p.CompanyID, id)
	}
	if err != nil {
		return err
	}
	b := append([]byte(`{"customer":`), appendDoc(nil, doc)...)
	c.Data(http.StatusOK, "application/json; charset=utf-8", append(b, '}'))
	return nil
}

// datetimeParam reads a datetime parameter in the forms imports accept
// (values.DateTime; no zone means the company's timezone, loc): ok is
// false when it is absent, and anything unreadable is a 400 naming it.
func datetimeParam(params url.Values, name string, loc *time.Location) (t time.Time, ok bool, err error) {
	v, ok := params[name]
	if !ok {
		return time.Time{}, false, nil
	}
	s, reason := values.DateTime(v[0], loc)
	if reason != "" {
		return time.Time{}, false, invalidParam(name, "%s", reason)
	}
	t, err = time.Parse(values.DateTimeLayout, s)
	if err != nil {
		return time.Time{}, false, invalidParam(name, "%s", "is not a datetime")
	}
	return t, true, nil
}
