package api

import (
	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/readmodels"
)

// retrieveWith serves GET /api/data/<key>/ from r: the generic limit,
// cursor and equality filters (retrieval.go).
func (s *Server) retrieveWith(r app.Retriever, key string) handlerFunc {
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
