// Package product is the product aggregate: the catalogue entry a client
// identifies by external_id, with its prices in minor units, its
// localised and per-shop versions and its stock per shop.
//
// Parser turns an import record into a validated Record; Book decides,
// record by record, which product it is, whether the record is the base
// record or a translation (localisation method A), and what it changes.
// Products carry no personal data: events hold the values in clear. The
// rules are written for people in docs/products.md.
package product

// TypeUpserted is the one event type of the product stream
// "product-<company>-<product id>": a record created or changed a product.
const TypeUpserted = "ProductUpserted"

// Upserted is the data of a ProductUpserted event.
type Upserted struct {
	ProductID  string `json:"product_id"`
	ExternalID string `json:"external_id"`
	// Created is true on the event that created the product.
	Created bool    `json:"created,omitempty"`
	Changes Changes `json:"changes"`
}

// Changes is what a record changed. A reader applies, in order: Set and
// Unset to the base record (they never name the same field; Unset
// "stock" or "versions" removes all of it), Stock merged by shop_id (an
// entry replaces the one of its shop, or is appended; others are kept),
// then each version's Set and Unset.
//
// Values of Set, by field, as JSON:
//
//	price, sale_price, lowest_price, price_before_campaign,
//	highest_price, minimal_price   integer, minor units (cents)
//	visible, is_deleted, exclude_from_recommendations, in_stock
//	                               boolean
//	recommendation_freq_days       number
//	salerow_priority               integer
//	category, category_id, ean     string or list of strings, as sent
//	tags                           list of strings, sorted, without duplicates
//	images, main_product_ids, recommendation_set_ids
//	                               list of strings, in the order sent
//	date                           UTC "YYYY-MM-DDThh:mm:ss[.ffffff]Z"
//	language                       ISO 639 base language, lower-case
//	currency                       ISO 4217 code, upper-case
//	every other field              string, as sent
type Changes struct {
	Set   map[string]any `json:"set,omitempty"`
	Unset []string       `json:"unset,omitempty"`
	Stock []Stock        `json:"stock,omitempty"`
	// Versions are keyed by dimension (VersionLanguage, VersionShop), then
	// by language code or shop external_id.
	Versions map[string]map[string]FieldChanges `json:"versions,omitempty"`
}

// FieldChanges are the changes of one version: its fields override the
// base record's for one language or shop.
type FieldChanges struct {
	Set   map[string]any `json:"set,omitempty"`
	Unset []string       `json:"unset,omitempty"`
}

// Stock is the quantity of the product in one shop.
type Stock struct {
	ShopID   string  `json:"shop_id"`
	Quantity float64 `json:"quantity"`
}

// Version dimensions: the keys of the versions object.
const (
	VersionLanguage = "language"
	VersionShop     = "shop_id"
)

// Field names with rules of their own.
const (
	FieldExternalID = "external_id"
	FieldPrice      = "price"
	FieldCurrency   = "currency"
	FieldLanguage   = "language"
	FieldVersions   = "versions"
	FieldStock      = "stock"
	FieldVisible    = "visible"
	FieldIsDeleted  = "is_deleted"
	FieldExclude    = "exclude_from_recommendations"
	FieldRecSetIDs  = "recommendation_set_ids"
)
