package product

import "github.com/clientele/clientele/domain"

// Stream is a product's stream, "product-<company>-<product id>".
func Stream(companyID, productID string) string {
	return domain.StreamID("product", companyID, productID)
}
