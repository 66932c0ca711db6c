package api

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/readmodels"
)

// Retriever reads one entity's retrieval pages; readmodels.Shops and
// readmodels.Products implement it.
type Retriever interface {
	// Retrieve returns one page of a company's entities in retrieval form.
	Retrieve(ctx context.Context, q readmodels.PageQuery) (readmodels.Page, error)
}

// retrieveWith serves GET /api/data/<key>/ from r: the generic limit,
// cursor and equality filters (retrieval.go).
func (s *Server) retrieveWith(r Retriever, key string) handlerFunc {
	return func(c *gin.Context) error {
		p, _ := principalOf(c)
		q, err := retrievalQuery(c.Request, p.CompanyID)
		if err != nil {
			return err
		}
		page, err := r.Retrieve(c.Request.Context(), q)
		if err != nil {
			return err
		}
		writeRetrieval(c, key, page)
		return nil
	}
}
