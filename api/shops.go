package api

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/readmodels"
)

// Retriever reads one entity's retrieval pages; readmodels.Shops,
// readmodels.Products, readmodels.Events and readmodels.Sales implement
// it.
type Retriever interface {
	// Stream reads one page of a company's entities in retrieval form,
	// handing each document to each as it arrives, and returns the
	// cursor of the next page, "" on the last.
	Stream(ctx context.Context, q readmodels.PageQuery, each readmodels.DocFunc) (next string, err error)
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
		return s.writeRetrieval(c, key, func(each readmodels.DocFunc) (string, error) {
			return r.Stream(c.Request.Context(), q, each)
		})
	}
}
