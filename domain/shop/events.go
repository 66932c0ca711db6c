// Package shop is the shop aggregate: a location where products are sold,
// identified by the client's external_id. Records upsert: only the keys a
// record supplies change, "" removes a stored key and null is absent.
//
// Parser turns an import record into a validated Record; Book decides,
// record by record, which shop it is (creating one for an unknown
// external_id) and what changes (Outcome). Shops carry no personal data,
// so their events hold the values in clear.
package shop

// TypeUpserted is the one event type of the shop stream
// "shop-<company>-<shop id>": a record created or changed a shop.
const TypeUpserted = "ShopUpserted"

// Upserted is the data of a ShopUpserted event.
//
// A reader applies Set, then Unset (they never name the same field), to
// the shop as the earlier events left it. Values of Set, by field:
//
//	external_id, name, phone_number, street_address, city
//	                  string, as sent (identifiers sent as numbers become strings)
//	email             string, lower-cased
//	shop_type         "online" or "offline"
//	country           ISO 3166-1 alpha-2, upper-case
//	is_hidden         boolean; in Set of the creating event (false when not sent)
//	<ShortName>__<x>  any JSON value, as sent
type Upserted struct {
	ShopID     string `json:"shop_id"`
	ExternalID string `json:"external_id"`
	// Created is true on the event that created the shop.
	Created bool           `json:"created,omitempty"`
	Set     map[string]any `json:"set,omitempty"`
	Unset   []string       `json:"unset,omitempty"`
}

// Field names of a shop (decisions.md, Shops).
const (
	FieldExternalID = "external_id"
	FieldShopType   = "shop_type"
	FieldIsHidden   = "is_hidden"
)
