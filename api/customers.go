package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/readmodels"
)

// handleRetrieveCustomers serves GET /api/data/customers/: a page of the
// company's customers, filtered by the query string (see retrievalQuery).
func (s *Server) handleRetrieveCustomers(c *gin.Context) error {
	p, _ := principalOf(c)
	q, err := retrievalQuery(c.Request, p.CompanyID)
	if err != nil {
		return err
	}
	if q, err = segmentFilter(q); err != nil {
		return err
	}
	if q.Segment != "" {
		if err := s.membersComputed(); err != nil {
			return err
		}
	}
	return s.writeRetrieval(c, "customers", func(each readmodels.DocFunc) (string, error) {
		return s.customers.Stream(c.Request.Context(), q, each)
	})
}

// historyJSON is a customer's audit history as answered.
type historyJSON struct {
	CustomerID  string             `json:"customer_id"`
	IsForgotten bool               `json:"is_forgotten"`
	IsDeleted   bool               `json:"is_deleted"`
	Events      []historyEventJSON `json:"events"`
}

type historyEventJSON struct {
	Version       int64             `json:"version"`
	Type          string            `json:"type"`
	RecordedAt    string            `json:"recorded_at"`
	RunID         string            `json:"run_id"`
	Actor         string            `json:"actor"`
	Source        string            `json:"source"`
	CorrelationID string            `json:"correlation_id"`
	CausationID   string            `json:"causation_id,omitempty"`
	Fields        []string          `json:"fields"`
	Changes       *customer.Changes `json:"changes,omitempty"`
	Redacted      bool              `json:"redacted"`
}

func newHistoryJSON(h readmodels.History) historyJSON {
	out := historyJSON{CustomerID: h.CustomerID, IsForgotten: h.Forgotten, IsDeleted: h.Deleted,
		Events: make([]historyEventJSON, 0, len(h.Events))}
	for _, e := range h.Events {
		out.Events = append(out.Events, historyEventJSON{
			Version:       e.Version,
			Type:          e.Type,
			RecordedAt:    timestampMicros(e.RecordedAt),
			RunID:         e.Metadata.RunID,
			Actor:         e.Metadata.Actor,
			Source:        e.Metadata.Source,
			CorrelationID: e.Metadata.CorrelationID,
			CausationID:   e.Metadata.CausationID,
			Fields:        e.Fields,
			Changes:       e.Changes,
			Redacted:      e.Redacted,
		})
	}
	return out
}

// handleCustomerHistory serves GET /api/customers/<id>/history/ (our
// addition): every event of the customer, in order, with who caused it and
// what it changed; once the customer is forgotten, only which fields.
func (s *Server) handleCustomerHistory(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := access.MayReadCustomerHistory(p); err != nil {
		return err
	}
	h, err := s.customerHistory.Customer(c.Request.Context(), p.CompanyID, c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newHistoryJSON(h))
	return nil
}
