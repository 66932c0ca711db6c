package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/dataquery"
)

// maxQueryBody bounds the body of a data query: a match and an update,
// not data.
const maxQueryBody = 1 << 20

// handleDataQuery serves POST /api/data/query/ {datatype, match, update}:
// it answers {"matched", "updated", "run_id"} once the update of every
// match is scheduled as an import run (GET /api/imports/<run_id>/ follows
// it).
func (s *Server) handleDataQuery(c *gin.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxQueryBody+1))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err // errorResponse says the limit
	}
	if err != nil {
		return domain.Errorf(domain.Invalid, "the request body could not be read to its end")
	}
	if len(body) > maxQueryBody {
		return domain.Errorf(domain.TooLarge, "a data query body is at most %d bytes", maxQueryBody)
	}
	q, err := dataquery.Parse(body)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	co, _ := companyOf(c)
	res, err := s.dataQueries.Handle(commandContext(c), imports.RunDataQuery{Principal: p, Company: co, Query: q})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, res)
	return nil
}
