package product

// kind is how a field's value is validated and normalised.
type kind int

const (
	kindText      kind = iota // string, as sent
	kindOneOrList             // string or list of strings, as sent
	kindList                  // list of strings, in order
	kindSet                   // list of strings, sorted, no duplicates
	kindMoney                 // integer minor units
	kindBool                  // boolean
	kindNumber                // any number
	kindInteger               // whole number
	kindDateTime              // UTC with Z
	kindURL                   // absolute http(s) URL
	kindLanguage              // ISO 639 base language
	kindCurrency              // ISO 4217 code
)

// fields is the Product table of the interface, but for external_id,
// stock and versions, which have rules of their own. A key that is none of
// these rejects the record: dropping it would lose data the client
// believes stored.
var fields = map[string]kind{
	"type": kindText, "category": kindOneOrList, "category_id": kindOneOrList,
	FieldCurrency: kindCurrency, "datasource": kindText, "vendor": kindText,
	"ean": kindOneOrList, "sku": kindText, "shop_id": kindText, "brand": kindText,
	"title": kindText, "image": kindText, "images": kindList, "date": kindDateTime,
	"url": kindURL, FieldPrice: kindMoney, "sale_price": kindMoney, "lowest_price": kindMoney,
	"price_before_campaign": kindMoney, "highest_price": kindMoney, "minimal_price": kindMoney,
	"description": kindText, "short_description": kindText, FieldLanguage: kindLanguage,
	FieldVisible: kindBool, FieldIsDeleted: kindBool, FieldExclude: kindBool,
	FieldRecSetIDs: kindList, "recommendation_freq_days": kindNumber, "in_stock": kindBool,
	"rating": kindText, "salerow_priority": kindInteger, "tags": kindSet,
	"main_product_ids": kindList, "unit": kindText, "weight": kindText,
}

// maxRecommendationSet is the most ids recommendation_set_ids may hold.
const maxRecommendationSet = 20

// versionable reports whether a field may differ per language or shop: a
// product's identity, its language, its stock and its deletion are the
// product's, not a version's.
func versionable(field string) bool {
	switch field {
	case FieldExternalID, FieldLanguage, FieldVersions, FieldStock, FieldIsDeleted:
		return false
	}
	_, ok := fields[field]
	return ok
}
