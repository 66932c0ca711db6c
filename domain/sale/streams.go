package sale

import "github.com/clientele/clientele/domain"

// Stream is a sale's stream, "sale-<company>-<sale id>".
func Stream(companyID, saleID string) string {
	return domain.StreamID("sale", companyID, saleID)
}
