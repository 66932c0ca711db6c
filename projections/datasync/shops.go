package datasync

import (
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/document"
)

// shopsFeed is the datasync feed of shops: each ShopUpserted is one
// change, the shop folded with the shops projector's own code
// (applyShop). A message always carries external_id (the shop's identity
// to clients; retrieval shows no other id). Shops are never deleted.
func shopsFeed() catalogFeed {
	return catalogFeed{
		name:      "shops",
		eventType: shop.TypeUpserted,
		always:    []string{shop.FieldExternalID},
		fold: func(e eventstore.RecordedEvent, doc map[string]any) (string, error) {
			var u shop.Upserted
			if err := document.DecodeNumbersEvent(e, &u); err != nil {
				return "", err
			}
			document.ApplyShop(doc, u)
			return u.ShopID, nil
		},
	}
}
