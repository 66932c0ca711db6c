package customer

import "github.com/clientele/clientele/domain"

// Stream is a customer's stream, "customer-<company>-<customer id>".
func Stream(companyID, customerID string) string {
	return domain.StreamID("customer", companyID, customerID)
}
