package datasync

import (
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/document"
)

// productsFeed is the datasync feed of products: each ProductUpserted is
// one change, the product folded with the products projector's own code
// (applyProduct). A message always carries external_id (the product's
// identity to clients; retrieval shows no other id) and is_deleted.
func productsFeed() catalogFeed {
	return catalogFeed{
		name:      "products",
		eventType: product.TypeUpserted,
		always:    []string{product.FieldExternalID, product.FieldIsDeleted},
		fold: func(e eventstore.RecordedEvent, doc map[string]any) (string, error) {
			var u product.Upserted
			if err := document.DecodeNumbersEvent(e, &u); err != nil {
				return "", err
			}
			document.ApplyProduct(doc, u)
			return u.ProductID, nil
		},
		deleted: func(doc map[string]any) bool { return doc[product.FieldIsDeleted] == true },
	}
}
