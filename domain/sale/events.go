// Package sale is the Sale entity of the interface: a transaction (the
// rows sharing a sale_external_id) with its transaction-level sale_*
// fields and its rows.
//
// Parser turns an import record (a flat row, or a transaction with
// sale_rows) into a Record; Merge combines the records of one transaction
// within a chunk; Book decides, against the stored state of the sale,
// what the transaction changes: it checks the mandatory fields of a new
// sale, converts _in_currency amounts with the sale's exchange rate (given,
// or from the company's table), rounds quantities, computes row totals,
// and defaults the state. The customer part (sale_customer_id, sale_email,
// sale_first_name, ...) becomes a customer.Record, the product part of each
// row a product link. The rules are written for people in docs/sales.md.
package sale

// TypeUpserted is the one event type of the sale stream
// "sale-<company>-<sale id>": records created or changed a transaction.
const TypeUpserted = "SaleUpserted"

// Upserted is the data of a SaleUpserted event.
type Upserted struct {
	SaleID     string `json:"sale_id"`
	ExternalID string `json:"sale_external_id"`
	// CustomerID is the internal id of the sale's customer.
	CustomerID string `json:"customer_id"`
	// Created is true on the event that created the sale.
	Created bool `json:"created,omitempty"`
	// Set and Unset change the transaction-level fields (sale_* names, in
	// the retrieval form: money in minor units of the default currency,
	// the _in_currency amounts beside them as sent, sale_date UTC,
	// sale_state one of States, sale_exchange_rate a decimal string, the
	// company fields <ShortName>__<name> as sent), but the Personal ones.
	// sale_total is there only when a record gave it: the read side
	// computes it from the rows otherwise.
	Set   map[string]any `json:"set,omitempty"`
	Unset []string       `json:"unset,omitempty"`
	// Rows are the rows the records gave, each replacing the stored row
	// with the same Key or added after the others.
	Rows []Row `json:"rows,omitempty"`
	// Sealed is crypto.Seal(dataKey, json(map of the Personal fields the
	// records set, "" for the ones they removed), aad = customer id); nil
	// when they give none.
	Sealed []byte `json:"sealed,omitempty"`
}

// Row is one row (line item) as the write side decided it.
type Row struct {
	// Key identifies the row within its sale: "id:" + its external_id,
	// else "product:" + the key of the row's product reference
	// (product.Ref.Key: "id:<product_id>", else "sku:<product_sku>", else
	// "ean:<ean>") + "#" + n, n counting from 0 the rows without
	// external_id of that reference in the transaction's records of one
	// chunk (so a re-import of the same rows replaces them). See Merge.
	Key string `json:"key"`
	// ProductID is the internal id of the row's product.
	ProductID string `json:"product_id"`
	// Fields are the row's fields in the retrieval form: product_id is
	// the product's external_id (a synthetic one when created from sku or
	// ean); quantity a number with at most two decimals (JSON number text
	// without trailing zeros); unit_price, discount (positive) and total
	// (possibly negative) in minor units of the default currency, total
	// computed when not given and unit_price is known; the _in_currency
	// amounts as sent (discount_in_currency positive).
	Fields map[string]any `json:"fields"`
}

// States are the values of sale_state.
var States = []string{"NEW", "PENDING_PAYMENT", "PROCESSING", "COMPLETE", "CANCELLED", "CLOSED", "HOLDED"}

// DefaultState is the state of a new sale that names none.
const DefaultState = "COMPLETE"

// Uncounted reports whether a sale in state s is left out of statistics
// and revenue.
func Uncounted(s string) bool { return s == "CANCELLED" || s == "CLOSED" }

// Personal are the transaction-level fields that identify or describe the
// person; they are sealed (see Upserted).
var Personal = []string{
	"sale_customer_id", "sale_email", "sale_phone_number", "sale_first_name", "sale_last_name",
	"sale_customer_company", "sale_street_address", "sale_city", "sale_zip_code", "sale_country",
	"sale_conversion_user_agent",
}
