package shop

import "github.com/clientele/clientele/domain"

// Stream is a shop's stream, "shop-<company>-<shop id>".
func Stream(companyID, shopID string) string {
	return domain.StreamID("shop", companyID, shopID)
}
